"""Exceptions of the supervisor (root: `SupervisorError`)."""

from __future__ import annotations

__all__ = [
    "ShellUnavailableError",
    "SupervisorClosedError",
    "SupervisorError",
    "TaskNotFoundError",
    "WorkingDirectoryError",
]


class SupervisorError(Exception):
    """Root of every error raised by the supervisor."""


class SupervisorClosedError(SupervisorError):
    """Raised when a command or task is started after `Supervisor.close`."""


class TaskNotFoundError(SupervisorError, KeyError):
    """Raised when a background task id is unknown; the message lists the known ids."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class ShellUnavailableError(SupervisorError):
    """Raised when the requested shell (e.g. ``pwsh`` for PowerShell) is not installed; names the fix."""


class WorkingDirectoryError(SupervisorError):
    """Raised when an explicit ``cwd`` cannot be used: missing, not a directory, not enterable, or hidden
    from commands (read-denied). Nothing ran; the message names the directory, why, and what to do."""
