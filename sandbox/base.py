"""The backend interface: an exec request becomes a running, killable process.

Every backend (local, bwrap, docker) implements `SandboxBackend`; the supervisor
above only ever talks to this interface, and the conformance suite runs the
same behaviour tests over each implementation.

Paths: the supervisor works in *sandbox paths* (what the process sees). For
local and bwrap these equal host paths; docker maps the workspace to
``DockerConfig.container_workspace``. `to_sandbox_path` / `to_host_path`
translate where a mapping exists.

Capabilities are typed, never guessed with ``getattr`` or a backend's name:
`SandboxBackend.enforces` (which policy aspects hold), `host_view`,
`shell_path`, `container_id`, and the `WorkspaceExporter` / `Recyclable`
protocols for the optional extras. `check_enforceable` is the one place that
refuses a policy whose limits a backend cannot enforce.
"""

from __future__ import annotations

import abc
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import TYPE_CHECKING, ClassVar, Literal, Protocol, Self, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from sandbox._proctree import COMMAND_ENV
from sandbox.errors import SandboxPolicyError, UnsupportedRequestError
from sandbox.policy import SandboxPolicy

if TYPE_CHECKING:  # annotations only: the network proxy is loaded by the backends that run it
    from collections.abc import Callable

    from anyio.abc import ByteReceiveStream, ByteSendStream

    from sandbox._proxy import Refusal

__all__ = [
    "ASPECTS",
    "COMMAND_ENV",
    "Aspect",
    "ExecRequest",
    "ExitStatus",
    "Recyclable",
    "SandboxBackend",
    "SandboxProcess",
    "WorkspaceExporter",
    "check_enforceable",
    "requested_limits",
]

#: A policy aspect a backend may enforce: ``filesystem`` (read-only host, writable roots),
#: ``read_denied`` (masked paths), ``network`` (the policy's network mode), ``memory``,
#: ``pids``, ``cpus``, ``tmp`` (size of the private /tmp), ``tree_kill`` (a kill reaches
#: every descendant).
Aspect = Literal["filesystem", "read_denied", "network", "memory", "pids", "cpus", "tmp", "tree_kill"]
ASPECTS: tuple[Aspect, ...] = (
    "filesystem",
    "read_denied",
    "network",
    "memory",
    "pids",
    "cpus",
    "tmp",
    "tree_kill",
)




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
    #: Run as this user inside the sandbox (a name, or ``uid`` / ``uid:gid``); None keeps the
    #: sandbox's own command identity. Backends that cannot switch identities refuse any
    #: value with `UnsupportedRequestError` rather than run as someone else than asked.
    user: str | None = Field(default=None, min_length=1)


def refuse_user_switch(request: ExecRequest, backend: str) -> None:
    """Raise when a backend without identity switching is asked to run as a given user."""
    if request.user is not None:
        raise UnsupportedRequestError(
            f"the {backend} sandbox runs every command under one identity and cannot run as "
            f"user {request.user!r}; use the docker sandbox for per-call users, or omit `user`"
        )


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

    #: Short backend name: ``local``, ``bwrap`` or ``docker`` (for people and records;
    #: decisions use the typed capabilities below, never the name).
    name: str
    #: Processes see the host's filesystem at host paths and run the host's programs
    #: (local, bwrap); False for a container with its own root filesystem.
    host_view: ClassVar[bool] = True
    #: The container that holds the session, where there is one (docker).
    container_id: str | None = None

    def __init__(self, policy: SandboxPolicy) -> None:
        self.policy = policy

    # --- lifecycle ---------------------------------------------------------
    async def start(self) -> None:  # noqa: B027 - optional hook
        """Prepare the sandbox (check tools, create containers). Idempotent."""

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Kill everything still running and release every resource. Idempotent."""

    async def __aenter__(self) -> Self:
        check_enforceable(self)  # also for a backend built without sandbox.factory.create_backend
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

    # --- file transfer -----------------------------------------------------
    async def read_file(
        self, path: str, *, max_bytes: int | None = None, timeout_s: float | None = None
    ) -> bytes:
        """The bytes of ``path`` as a command in this sandbox sees it (relative: to the workspace).

        Runs inside the sandbox (see `sandbox._files`), so it reaches only what a
        command could. Raises `FileNotFoundError`, `IsADirectoryError`,
        `NotADirectoryError`, `PermissionError`, `FileTooLargeError` (more than
        ``max_bytes``, default 100 MiB), `FileTransferError`, or `TimeoutError`.
        """
        from sandbox import _files

        limit = _files.DEFAULT_MAX_READ_BYTES if max_bytes is None else max_bytes
        return await _files.read_file(self, path, max_bytes=limit, timeout_s=timeout_s)

    async def write_file(self, path: str, data: bytes, *, timeout_s: float | None = None) -> None:
        """Write ``data`` to ``path`` inside this sandbox (relative: to the workspace), making parent dirs.

        Runs inside the sandbox with the commands' identity and confinement.
        Raises `IsADirectoryError`, `NotADirectoryError`, `PermissionError`,
        `FileTransferError`, or `TimeoutError`.
        """
        from sandbox import _files

        await _files.write_file(self, path, data, timeout_s=timeout_s)

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

    @property
    def shell_path(self) -> str:
        """The POSIX shell commands are wrapped in (``bash``; images without bash say ``/bin/sh``)."""
        return "bash"

    @property
    def network_refusals(self) -> list[Refusal]:
        """Connections the network proxy refused (network ``proxied``), oldest first; none elsewhere."""
        return []

    def enforces(self) -> frozenset[Aspect]:
        """Which policy aspects this backend really enforces, here, for its policy (see `Aspect`).

        Callable before `start`: `check_enforceable` asks it to refuse a limit
        the backend would otherwise ignore.
        """
        return frozenset({"tree_kill"})

    def unenforced_reason(self, aspect: Aspect) -> str:
        """Why ``aspect`` is not in `enforces` (shown in the refusal); backends say more where they can."""
        return f"the {self.name} backend does not enforce it"


@runtime_checkable
class WorkspaceExporter(Protocol):
    """A backend whose workspace is a copy that can be exported (docker copy mode)."""

    async def export_workspace(self, dest: Path, *, refuse: Callable[[str], str | None] | None = None) -> None:
        """Copy the sandbox's workspace to the host directory ``dest``; ``refuse`` gives a reason
        to hold back a path below it (the caller's protected files), named in the error."""
        ...


@runtime_checkable
class Recyclable(Protocol):
    """A backend that can be reset and reused for another task (docker, in batch pools)."""

    resets: int
    container_id: str | None

    def reuse_blocker(self) -> str | None:
        """Why the sandbox cannot be reused (None when it can)."""
        ...

    async def protect_executor(self, timeout_s: float = ...) -> None:
        """Make the in-sandbox executor tamper-proof before the first task."""
        ...

    async def reset(self, timeout_s: float = ...) -> None:
        """Return the sandbox to its pristine state between tasks."""
        ...

    async def reuse_for(self, policy: SandboxPolicy) -> None:
        """Adopt the next task's policy (only the workspace may differ)."""
        ...


def requested_limits(policy: SandboxPolicy) -> dict[Aspect, str]:
    """The limit aspects ``policy`` sets, each with the option that sets it."""
    limits = policy.limits
    wanted: tuple[tuple[Aspect, str, object], ...] = (
        ("memory", "--memory", limits.memory_bytes),
        ("pids", "--pids", limits.pids),
        ("cpus", "--cpus", limits.cpus),
        ("tmp", "the tmp_bytes limit", limits.tmp_bytes),
    )
    return {aspect: flag for aspect, flag, value in wanted if value is not None}


def check_enforceable(backend: SandboxBackend) -> None:
    """Refuse (`SandboxPolicyError`) a policy whose limits ``backend`` cannot enforce here.

    Every route that starts a backend goes through `sandbox.factory.create_backend`,
    which calls this: a limit is enforced or refused, never silently ignored.
    Filesystem and network aspects are not refused here: the local backend is
    "no isolation" by choice, and says so where it is chosen.
    """
    missing = {a: flag for a, flag in requested_limits(backend.policy).items() if a not in backend.enforces()}
    if not missing:
        return
    reasons = "; ".join(f"{a}: {backend.unenforced_reason(a)}" for a in missing)
    flags = ", ".join(missing.values())
    raise SandboxPolicyError(
        f"the {backend.name} sandbox cannot enforce the requested {', '.join(missing)} limit "
        f"({reasons}). Use --sandbox docker, or --sandbox bwrap as root or with a delegated cgroup v2 "
        f"subtree (it enforces memory, pids and cpus through cgroups), or drop {flags}."
    )
