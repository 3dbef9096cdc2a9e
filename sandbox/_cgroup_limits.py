"""Resource limits for host-spawned backends (bwrap) through one cgroup per session.

`CgroupLimits` is a mixin: the backend says what it can enforce
(`cgroup_enforces`, `unenforced_reason`), makes the cgroup at start
(`cgroup_open`), prefixes each host-side argv so the spawned process joins it
before it can fork (`cgroup_argv`), reports OOM kills (`cgroup_watch`) and
removes it at close (`cgroup_close`). See `sandbox._cgroup` for the mechanics.
"""

from __future__ import annotations

import logging
import os
import shutil

from anyio.abc import ByteReceiveStream, ByteSendStream

from sandbox._cgroup import CgroupUnavailableError, LimitAspect, SessionCgroup, cgroup_unavailable_reasons
from sandbox.base import Aspect, ExitStatus, SandboxProcess
from sandbox.errors import SandboxPolicyError
from sandbox.policy import SandboxPolicy

__all__ = ["CgroupLimits", "OomAwareProcess"]

_log = logging.getLogger(__name__)

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
    #: The pids cap when the policy sets none (`sandbox.config.BwrapConfig.default_pids`; None: none).
    default_pids: int | None = None
    #: The memory ceiling when the policy sets none (`sandbox.config.BwrapConfig.default_memory_bytes`,
    #: resolved; None: none). Held only by a session cgroup: without one there is nothing to hold it.
    default_memory: int | None = None
    #: The session cgroup's memory ceiling in force (the policy's or the default; None: none).
    memory_ceiling: int | None = None
    #: The session's pids cap in force (the policy's or the default; None: none).
    _pids_cap: int | None = None
    #: Where no cgroup holds the pids cap: the RLIMIT_NPROC every process of the session starts with.
    _nproc: int | None = None

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
        if self._cgroup is not None or self._nproc is not None:
            return
        limits = self.policy.limits
        self._pids_cap = limits.pids
        defaults = self._defaults()
        pids_only = {k: v for k, v in defaults.items() if k == "pids"}
        # Default caps, not the caller's request: held by the cgroup where one can be made (all of
        # them, else the pids cap alone), else the pids cap by RLIMIT_NPROC; never a reason to refuse.
        for update in (defaults, pids_only if pids_only != defaults else {}):
            if not update:
                continue
            try:
                self._cgroup = SessionCgroup.create(limits.model_copy(update=update))
            except CgroupUnavailableError as exc:
                _log.info("default caps %s: no session cgroup (%s)", sorted(update), exc)
                continue
            self.memory_ceiling = update.get("memory_bytes", limits.memory_bytes)
            if "pids" in update:
                self._pids_cap = update["pids"]
            break
        if self._pids_cap is None and self.default_pids is not None:  # no cgroup holds it
            self._nproc = _nproc_cap(self.default_pids)
            self._pids_cap = self.default_pids if self._nproc is not None else None
        if self._cgroup is not None:
            return
        try:
            self._cgroup = SessionCgroup.create(limits)
            self.memory_ceiling = limits.memory_bytes
        except CgroupUnavailableError as exc:
            raise SandboxPolicyError(
                f"cannot make the session cgroup that enforces the requested limits ({exc.strerror or exc}). "
                "Use --sandbox docker, or run as root or in a delegated cgroup v2 subtree, "
                "or drop --memory/--pids/--cpus."
            ) from exc

    def _defaults(self) -> dict[str, int]:
        """The default caps the policy leaves open and a cgroup here can hold (``ResourceLimits`` keys)."""
        missing = cgroup_unavailable_reasons()
        limits = self.policy.limits
        defaults: dict[str, int] = {}
        if limits.pids is None and self.default_pids is not None and "pids" not in missing:
            defaults["pids"] = self.default_pids
        if limits.memory_bytes is None and self.default_memory is not None and "memory" not in missing:
            defaults["memory_bytes"] = self.default_memory
        return defaults

    def pids_exhausted_message(self) -> str | None:
        """What a command that cannot start for want of a process is told (None without a pids limit)."""
        if self._pids_cap is None:
            return None
        which = "" if self.policy.limits.pids is not None else ", the default: BwrapConfig.default_pids"
        return (
            f"the session's process limit (pids: {self._pids_cap}{which}) is used up by processes "
            "still running in it; stop background tasks you no longer need (TaskStop) or the commands "
            "that started many processes, then run this again"
        )

    def cgroup_argv(self, argv: list[str]) -> list[str]:
        """``argv`` prefixed so the process joins the session cgroup before it runs (unchanged without one)."""
        if self._nproc is not None and _PRLIMIT is not None:
            argv = [_PRLIMIT, f"--nproc={self._nproc}:{self._nproc}", "--", *argv]
        return argv if self._cgroup is None else [*self._cgroup.enter_argv(), *argv]

    def cgroup_watch(self, process: SandboxProcess) -> SandboxProcess:
        """``process``, reporting OOM kills of the session cgroup (unchanged without a memory limit)."""
        if self._cgroup is None or self._cgroup.memory is None:
            return process
        return OomAwareProcess(process, self._cgroup)

    def cgroup_close(self) -> None:
        """Remove the session cgroup, killing anything still in it (call after the processes are killed)."""
        group, self._cgroup = self._cgroup, None
        self._nproc = self._pids_cap = self.memory_ceiling = None
        if group is not None:
            group.remove()


_PRLIMIT = shutil.which("prlimit", path=os.defpath + ":/usr/sbin:/sbin")


def _nproc_cap(pids: int) -> int | None:
    """The RLIMIT_NPROC that caps a session at about ``pids`` processes, None when prlimit is missing.

    RLIMIT_NPROC counts every process of the real uid (in a user namespace, at each level up to the
    host's). Root's own processes are exempt, but a root caller's commands run as the session's
    sandbox uid, which runs nothing else: ``pids`` as is. A non-root caller's uid has its other
    processes on the host too: ``pids`` on top of those it has now (a smaller cap would stop every
    fork of the session at once). Its sandboxes' namespaces are children of the budget namespace
    (`sandbox._ucounts.budget_prefix`), whose count -- what they all run -- is checked against this
    cap, and the host's against the caller's own limit (round 21): so only its processes outside
    this process's user namespace count (the budget namespace's, and any other namespace's)."""
    if _PRLIMIT is None:
        _log.warning("default pids cap not applied: util-linux's prlimit is not installed")
        return None
    import resource

    hard = resource.getrlimit(resource.RLIMIT_NPROC)[1]
    cap = pids
    if os.geteuid() != 0:
        uid = os.getuid()
        own = os.readlink("/proc/self/ns/user")
        for entry in os.scandir("/proc"):
            try:
                if (
                    entry.name.isdigit()
                    and entry.stat().st_uid == uid
                    and os.readlink(f"/proc/{entry.name}/ns/user") != own
                ):
                    cap += len(os.listdir(f"/proc/{entry.name}/task"))  # the limit counts threads
            except OSError:
                continue
    return cap if hard == resource.RLIM_INFINITY else min(cap, hard)  # a hard limit cannot be raised
