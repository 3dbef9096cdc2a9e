"""Exceptions of the sandbox package (root: `SandboxError`)."""

from __future__ import annotations

__all__ = [
    "BackendUnavailableError",
    "CwdRefusedError",
    "FileTooLargeError",
    "FileTransferError",
    "SandboxClosedError",
    "SandboxError",
    "SandboxExecError",
    "SandboxPolicyError",
    "UnsupportedRequestError",
]


class SandboxError(Exception):
    """Root of every error raised by the sandbox package."""


class BackendUnavailableError(SandboxError):
    """Raised when a backend cannot run here (bwrap missing, no namespaces, daemon down, image absent).

    The message names the fix.
    """


class SandboxExecError(SandboxError):
    """Raised when a process cannot be started inside a sandbox that is otherwise up."""


class CwdRefusedError(SandboxExecError):
    """Raised when the sandbox could not enter the request's working directory (missing, not a
    directory, not enterable, or reached through a symbolic link now): nothing ran.

    Its own type so a caller that chose the directory from tracked state (a session's cwd) can move
    on from it instead of failing every later command there.
    """


class UnsupportedRequestError(SandboxExecError):
    """Raised when a request asks for something this backend cannot do (e.g. a per-call user).

    Refused before anything runs; the message names the backend that can.
    """


class SandboxClosedError(SandboxError):
    """Raised when exec is called on a backend that was closed (or never started)."""


class SandboxPolicyError(BackendUnavailableError):
    """Raised when a backend cannot enforce part of the requested policy (a memory, pids, cpu or /tmp limit,
    or a writable root it cannot keep other sessions' scratch out of).

    A limit is enforced or refused, never ignored; the message names the limit,
    the backend and what to do (another backend, root for cgroups, or drop the limit).
    """


class FileTransferError(SandboxError):
    """Raised when `SandboxBackend.read_file` / `write_file` fails for a reason without an OS error type.

    (Missing files, directories and refused access raise `FileNotFoundError`,
    `IsADirectoryError`, `NotADirectoryError` and `PermissionError`.) The
    message carries what the sandbox reported.
    """


class FileTooLargeError(FileTransferError):
    """Raised when `SandboxBackend.read_file` meets a file larger than its ``max_bytes``.

    Nothing of the file is returned; the message says how to read it anyway.
    """

    def __init__(self, message: str, limit: int) -> None:
        super().__init__(message)
        #: The byte limit that was exceeded.
        self.limit = limit
