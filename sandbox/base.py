"""The backend interface: an exec request becomes a running, killable process.

Every backend (local, bwrap, docker) implements `SandboxBackend`; the supervisor
above only ever talks to this interface, and the conformance suite runs the
same behaviour tests over each implementation.

Paths: the supervisor works in *sandbox paths* (what the process sees). For
local and bwrap these equal host paths; docker maps the workspace to
``DockerConfig.container_workspace``. `to_sandbox_path` / `to_host_path`
translate where a mapping exists.
"""

from __future__ import annotations

import abc
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import Self

from anyio.abc import ByteReceiveStream, ByteSendStream
from pydantic import BaseModel, ConfigDict, Field

from sandbox.policy import SandboxPolicy

__all__ = ["ExecRequest", "ExitStatus", "SandboxBackend", "SandboxProcess"]


class ExecRequest(BaseModel):
    """One process to start inside the sandbox."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    argv: tuple[str, ...] = Field(min_length=1)
    #: Working directory, as a sandbox path.
    cwd: str
    #: The complete environment of the process (the backend adds nothing but
    #: what it documents, e.g. ``SHELLRT_CWD_FILE`` when ``report_cwd``).
    env: dict[str, str] = Field(default_factory=dict)
    #: Whether the process gets a stdin pipe (else stdin is /dev/null).
    stdin: bool = False
    #: Send stderr into the stdout stream (one interleaved stream).
    merge_stderr: bool = False
    #: When true the backend sets ``SHELLRT_CWD_FILE`` to a writable path inside
    #: the sandbox; whatever the process writes there (its final ``pwd -P``) is
    #: returned as ``ExitStatus.cwd``.
    report_cwd: bool = False


class ExitStatus(BaseModel):
    """How a sandboxed process ended."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: Exit code; for a signal death, 128 + signal number (shell convention).
    exit_code: int
    #: Signal that killed the process, when it died of one.
    signal: int | None = None
    #: The kernel's OOM killer ended the process (where the backend can tell).
    oom_killed: bool = False
    #: Final working directory (sandbox path) when ``report_cwd`` was asked and it was written.
    cwd: str | None = None
    #: Set when the sandbox itself failed while the process ran (its container died or
    #: was removed, its executor is gone): ``exit_code`` is then not the command's.
    #: Callers must report an error (``is_error``) with this text.
    sandbox_failure: str | None = None


class SandboxProcess(abc.ABC):
    """A started process; its streams may be read while it runs."""

    #: Output streams (``stderr`` is None when merged into stdout).
    stdout: ByteReceiveStream
    stderr: ByteReceiveStream | None
    #: Input stream when the request asked for one.
    stdin: ByteSendStream | None

    @property
    @abc.abstractmethod
    def pid(self) -> int | None:
        """Host pid of the process (or of what stands for it), if it has one."""

    @abc.abstractmethod
    async def wait(self) -> ExitStatus:
        """Wait until the process has exited and its streams are drained of EOF."""

    @abc.abstractmethod
    async def kill(self) -> None:
        """Kill the process and every descendant (children, setsid'd, double-forked).

        Idempotent; returns once nothing of the tree is left running.
        """


class SandboxBackend(abc.ABC):
    """A sandbox that can run many processes, concurrently, under one policy."""

    #: Short backend name: ``local``, ``bwrap`` or ``docker``.
    name: str

    def __init__(self, policy: SandboxPolicy) -> None:
        self.policy = policy

    # --- lifecycle ---------------------------------------------------------
    async def start(self) -> None:  # noqa: B027 - optional hook
        """Prepare the sandbox (check tools, create containers). Idempotent."""

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Kill everything still running and release every resource. Idempotent."""

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # --- execution ---------------------------------------------------------
    @abc.abstractmethod
    async def exec(self, request: ExecRequest) -> SandboxProcess:
        """Start one process; raises `SandboxExecError` if it cannot start."""

    # --- description -------------------------------------------------------
    @property
    def workspace(self) -> str:
        """The workspace root as the sandboxed process sees it."""
        return str(self.policy.workspace)

    def writable_roots(self) -> tuple[str, ...]:
        """Roots a command may write in, as sandbox paths (workspace first)."""
        return tuple(str(p) for p in self.policy.allowed_roots())

    def to_sandbox_path(self, host_path: Path) -> str | None:
        """Translate a host path to the sandbox's view (None when not visible)."""
        return str(host_path)

    def to_host_path(self, sandbox_path: str) -> Path | None:
        """Translate a sandbox path to the host (None when it has no host twin)."""
        return Path(PurePosixPath(sandbox_path))

    def enforces(self) -> frozenset[str]:
        """Which policy aspects this backend really enforces.

        Any of ``filesystem``, ``read_denied``, ``network``, ``memory``, ``pids``,
        ``cpus``, ``tree_kill``. Callers warn about the rest.
        """
        return frozenset({"tree_kill"})
