"""Resource limits for host-spawned backends (bwrap) through one cgroup per session.

`CgroupLimits` is a mixin: the backend says what it can enforce
(`cgroup_enforces`, `unenforced_reason`), makes the cgroup at start
(`cgroup_open`), prefixes each host-side argv so the spawned process joins it
before it can fork (`cgroup_argv`), reports OOM kills (`cgroup_watch`) and
removes it at close (`cgroup_close`). See `sandbox._cgroup` for the mechanics.
"""

from __future__ import annotations

from anyio.abc import ByteReceiveStream, ByteSendStream

from sandbox._cgroup import CgroupUnavailableError, LimitAspect, SessionCgroup, cgroup_unavailable_reasons
from sandbox.base import Aspect, ExitStatus, SandboxProcess
from sandbox.errors import SandboxPolicyError
from sandbox.policy import SandboxPolicy

__all__ = ["CgroupLimits", "OomAwareProcess"]

_LIMITS: tuple[LimitAspect, ...] = ("memory", "pids", "cpus")
_SIGKILL_EXIT = 128 + 9


class OomAwareProcess(SandboxProcess):
    """A process whose exit status says ``oom_killed`` when the session cgroup's OOM killer ended it."""

    def __init__(self, inner: SandboxProcess, group: SessionCgroup) -> None:
        self._inner = inner
        self._group = group
        self._before = group.oom_kills()
        self.stdout: ByteReceiveStream = inner.stdout
        self.stderr: ByteReceiveStream | None = inner.stderr
        self.stdin: ByteSendStream | None = inner.stdin

    @property
    def pid(self) -> int | None:
        return self._inner.pid

    async def wait(self) -> ExitStatus:
        status = await self._inner.wait()
        killed = status.signal == 9 or status.exit_code == _SIGKILL_EXIT
        if killed and not status.oom_killed and self._group.oom_kills() > self._before:
            # A SIGKILL death while the session's OOM counter rose: the kernel ended it for memory
            # (with several commands dying at once, each is reported; the cgroup is the session's).
            return status.model_copy(update={"oom_killed": True})
        return status

    async def kill(self) -> None:
        await self._inner.kill()


class CgroupLimits:
    """Mixin for a `SandboxBackend` that enforces memory, pids and cpus through a session cgroup."""

    policy: SandboxPolicy
    _cgroup: SessionCgroup | None = None

    def cgroup_enforces(self) -> frozenset[Aspect]:
        """The limit aspects a session cgroup can hold on this machine, for this caller."""
        missing = cgroup_unavailable_reasons()
        return frozenset(a for a in _LIMITS if a not in missing)

    def unenforced_reason(self, aspect: Aspect) -> str:
        for limit, reason in cgroup_unavailable_reasons().items():
            if limit == aspect:
                return f"no cgroup for it: {reason}"
        return "this backend has no such limit"

    def cgroup_open(self) -> None:
        """Make the session cgroup when the policy sets a limit; `SandboxPolicyError` when it cannot."""
        if self._cgroup is not None:
            return
        try:
            self._cgroup = SessionCgroup.create(self.policy.limits)
        except CgroupUnavailableError as exc:
            raise SandboxPolicyError(
                f"cannot make the session cgroup that enforces the requested limits ({exc.strerror or exc}). "
                "Use --sandbox docker, or run as root or in a delegated cgroup v2 subtree, "
                "or drop --memory/--pids/--cpus."
            ) from exc

    def pids_exhausted_message(self) -> str | None:
        """What a command that cannot start for want of a process is told (None without a pids limit)."""
        if self._cgroup is None or self.policy.limits.pids is None:
            return None
        return (
            f"the session's process limit (pids: {self.policy.limits.pids}) is used up by processes "
            "still running in it; stop background tasks you no longer need (TaskStop) or the commands "
            "that started many processes, then run this again"
        )

    def cgroup_argv(self, argv: list[str]) -> list[str]:
        """``argv`` prefixed so the process joins the session cgroup before it runs (unchanged without one)."""
        return argv if self._cgroup is None else [*self._cgroup.enter_argv(), *argv]

    def cgroup_watch(self, process: SandboxProcess) -> SandboxProcess:
        """``process``, reporting OOM kills of the session cgroup (unchanged without a memory limit)."""
        if self._cgroup is None or self._cgroup.memory is None:
            return process
        return OomAwareProcess(process, self._cgroup)

    def cgroup_close(self) -> None:
        """Remove the session cgroup, killing anything still in it (call after the processes are killed)."""
        group, self._cgroup = self._cgroup, None
        if group is not None:
            group.remove()
