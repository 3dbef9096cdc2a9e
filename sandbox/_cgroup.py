"""One cgroup per sandbox session: memory, pids and cpu limits for every command of the session.

Why: bwrap has no resource limits of its own; docker puts a container's
processes in one cgroup, and this does the same for a bwrap session. The cgroup
is made *under the cgroup the caller runs in* (so it never escapes a limit the
caller is under), per controller:

- cgroup v1 (a hierarchy per controller, ``/sys/fs/cgroup/memory`` …, writable
  by root): ``memory.limit_in_bytes`` (+ ``memory.memsw.limit_in_bytes``: no
  swap, a hog is OOM-killed as in docker), ``pids.max``,
  ``cpu.cfs_quota_us``/``cpu.cfs_period_us``; OOM kills counted from
  ``memory.oom_control``;
- cgroup v2 (one hierarchy): ``memory.max`` + ``memory.swap.max``, ``pids.max``,
  ``cpu.max``; OOM kills from ``memory.events``. The caller's cgroup must let us
  make a child with the controllers (root, or a delegated subtree whose
  ``cgroup.controllers`` has them). v2 hands a controller to children only from
  a cgroup that holds no process (the root cgroup excepted), so the caller
  first moves itself and its children (an MCP server, say) into a leaf child,
  ``shellrt.leaf``, and the session cgroups are made beside it (`_vacate`); a
  cgroup that also holds processes of others is refused, not rearranged.

Processes join at spawn: the host-side argv is prefixed with a tiny ``/bin/sh``
that writes its own pid to each ``cgroup.procs`` and then ``exec``s bwrap, so
nothing the sandbox forks can start outside (`SessionCgroup.enter_argv`).

Cleanup: `SessionCgroup.remove` at close kills whatever is still in it and
removes it. Names are ``shellrt-<owner pid>-<token>-n<pid namespace inode>``; a
cgroup whose owner died without closing (SIGKILL) is emptied and removed by the
next session that starts in the same pid namespace (`sweep_orphans`; a
sweeper in another pid namespace cannot tell a live owner from a dead one).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import secrets
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # stdlib only at run time: the module also runs standalone (tests, as another uid)
    from sandbox.policy import ResourceLimits

__all__ = [
    "CGROUP_PREFIX",
    "SOCKET_SHARE_MAX",
    "CgroupUnavailableError",
    "LimitAspect",
    "SessionCgroup",
    "cgroup_unavailable_reasons",
    "socket_share",
    "sweep_orphans",
]

CGROUP_PREFIX = "shellrt-"
LimitAspect = Literal["memory", "pids", "cpus"]
#: The kernel controller behind each limit aspect.
_CONTROLLER: dict[LimitAspect, str] = {"memory": "memory", "pids": "pids", "cpus": "cpu"}
_CPU_PERIOD_US = 100_000
_SH = "/bin/sh"
#: The leaf child a v2 caller moves itself into so that its cgroup may enable controllers (no
#: ``shellrt-`` prefix: `sweep_orphans` never touches it).
_LEAF = "shellrt.leaf"
#: argv[1..]: cgroup.procs files, then ``--``, then the program.
_JOIN_SCRIPT = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'


class CgroupUnavailableError(OSError):
    """Raised when the session cgroup cannot be made here (no controller, no permission)."""


@dataclass(frozen=True)
class _Hierarchy:
    """Where a controller lives: the mount point, its version, and the caller's cgroup in it."""

    mount: Path
    version: Literal[1, 2]
    own: Path  # the caller's cgroup directory (absolute host path)


def _mounts() -> list[tuple[str, str, str]]:
    """(mount point, fs type, super options) of every cgroup mount, from /proc/self/mountinfo."""
    found: list[tuple[str, str, str]] = []
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, rest = left.split(), right.split()
        if len(fields) >= 5 and len(rest) >= 3 and rest[0] in ("cgroup", "cgroup2"):
            found.append((fields[4].replace("\\040", " "), rest[0], rest[2]))
    return found


def _own_paths() -> dict[str, str]:
    """The caller's cgroup path per v1 controller, and under key ``""`` its v2 path."""
    paths: dict[str, str] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return paths
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        for controller in parts[1].split(",") if parts[1] else [""]:
            paths[controller] = parts[2]
    return paths


def _hierarchy(controller: str) -> _Hierarchy | None:
    """The hierarchy that holds ``controller`` for this process, v1 first (a controller is in one)."""
    own = _own_paths()
    mounts = _mounts()
    for point, fstype, options in mounts:
        if fstype == "cgroup" and controller in options.split(",") and controller in own:
            return _Hierarchy(Path(point), 1, Path(point) / own[controller].lstrip("/"))
    for point, fstype, _ in mounts:
        if fstype != "cgroup2" or "" not in own:
            continue
        base = Path(point) / own[""].lstrip("/")
        if base.name == _LEAF:  # moved there by `_vacate`: the sessions live beside it
            base = base.parent
        try:
            available = (Path(point) / "cgroup.controllers").read_text().split()
        except OSError:
            continue
        if controller in available:
            return _Hierarchy(Path(point), 2, base)
    return None


def _is_root_cgroup(directory: Path) -> bool:
    """The hierarchy's real root (exempt from v2's no-internal-process rule) has no ``cgroup.type``."""
    return not (directory / "cgroup.type").exists()


def _parent_pid(pid: int) -> int:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat.rpartition(")")[2].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def _ours(pids: list[int]) -> tuple[list[int], list[int]]:
    """``pids`` split into this process and its descendants (an MCP server, an earlier command)
    and the rest."""
    me = os.getpid()
    ours: list[int] = []
    others: list[int] = []
    for pid in pids:
        ancestor = pid
        while ancestor > 1 and ancestor != me:
            ancestor = _parent_pid(ancestor)
        (ours if ancestor == me else others).append(pid)
    return ours, others


def _others_reason(own: Path) -> str | None:
    """Why ``own`` cannot enable a controller for its children: processes in it that are not ours."""
    if _is_root_cgroup(own):
        return None
    _, others = _ours(_pids_in(own))
    if not others:
        return None
    shown = " ".join(map(str, others[:5])) + (" …" if len(others) > 5 else "")
    return (
        f"{own} holds other processes besides this one and its children (pids {shown}), and cgroup "
        "v2 enables a controller for child cgroups only in a cgroup without processes; start "
        "shellrt in a cgroup of its own (e.g. systemd-run --scope -p Delegate=yes …)"
    )


def _vacate(own: Path) -> str | None:
    """Move the caller and its children from ``own`` into its leaf child so ``own`` may enable
    controllers; else why not (processes of others are never moved)."""
    why = _others_reason(own)
    if why is not None or _is_root_cgroup(own):
        return why
    ours, _ = _ours(_pids_in(own))
    if not ours:
        return None
    leaf = own / _LEAF
    with contextlib.suppress(FileExistsError):
        leaf.mkdir()
    for pid in ours:
        with contextlib.suppress(ProcessLookupError):  # ended meanwhile
            (leaf / "cgroup.procs").write_text(str(pid))
    return None


def _v2_ready(own: Path, controller: str) -> str | None:
    """None when a child of ``own`` gets ``controller`` (enabling it if we may), else why not."""
    control = own / "cgroup.subtree_control"
    try:
        if controller in control.read_text().split():
            return None
        if controller not in (own / "cgroup.controllers").read_text().split():
            return f"the {controller} controller is not delegated to {own}"
        why = _vacate(own)
        if why is not None:
            return why
        control.write_text(f"+{controller}")
    except OSError as exc:
        return f"cannot enable the {controller} controller in {own} ({exc.strerror or exc})"
    return None


def _reason(aspect: LimitAspect) -> str | None:
    controller = _CONTROLLER[aspect]
    where = _hierarchy(controller)
    if where is None:
        return f"no cgroup hierarchy with the {controller} controller is mounted"
    if not os.access(where.own, os.W_OK | os.X_OK):
        return (
            f"{where.own} is not writable by uid {os.geteuid()} (cgroup v{where.version}); run as root "
            "or in a delegated cgroup v2 subtree"
        )
    if where.version == 2:
        try:
            if controller not in (where.own / "cgroup.subtree_control").read_text().split():
                available = (where.own / "cgroup.controllers").read_text().split()
                if controller not in available:
                    return f"the {controller} controller is not delegated to {where.own}"
                return _others_reason(where.own)
        except OSError as exc:
            return f"cannot read {where.own} ({exc.strerror or exc})"
    return None


@functools.lru_cache(maxsize=1)
def cgroup_unavailable_reasons() -> dict[LimitAspect, str]:
    """Per limit aspect that cannot be enforced here, why (empty: all can). Probed once per process."""
    reasons: dict[LimitAspect, str] = {}
    for aspect in _CONTROLLER:
        reason = _reason(aspect)
        if reason is not None:
            reasons[aspect] = reason
    return reasons


#: cgroup v1's socket memory ceiling (red team round 35): the kernel counts socket buffers against
#: ``net.ipv4.tcp_mem``/``udp_mem``, one budget for the whole host (a sandbox's own network namespace
#: included; past its hard limit every TCP socket of the host fails to allocate), and v1 charges
#: them to a cgroup only once this is set (v2 charges them to ``memory.max`` by itself).
_V1_SOCKETS = "memory.kmem.tcp.limit_in_bytes"
#: What a session's sockets (TCP and UDP) may queue together: a quarter of its memory ceiling, 64
#: MiB at most. Builds and downloads need a few MiB; past it the kernel shrinks the session's
#: socket buffers (memory pressure), and a send waits or says EAGAIN.
SOCKET_SHARE_MAX = 64 << 20


def socket_share(memory_bytes: int) -> int:
    """The socket memory a session with the memory ceiling ``memory_bytes`` may hold (`SOCKET_SHARE_MAX`)."""
    return min(memory_bytes // 4, SOCKET_SHARE_MAX)


def _wanted(limits: ResourceLimits) -> list[LimitAspect]:
    wanted: list[LimitAspect] = []
    if limits.memory_bytes is not None:
        wanted.append("memory")
    if limits.pids is not None:
        wanted.append("pids")
    if limits.cpus is not None:
        wanted.append("cpus")
    return wanted


def _write(path: Path, value: str) -> None:
    try:
        path.write_text(value)
    except OSError as exc:
        raise CgroupUnavailableError(exc.errno, f"cannot write {value!r} to {path}: {exc.strerror}") from exc


def _settings(
    version: int, aspect: LimitAspect, limits: ResourceLimits, directory: Path
) -> list[tuple[str, str]]:
    """The (file, value) pairs that set ``aspect``, in the order they must be written."""
    if aspect == "memory":
        assert limits.memory_bytes is not None
        value = str(limits.memory_bytes)
        if version == 1:
            pairs = [("memory.limit_in_bytes", value)]
            if (directory / "memory.memsw.limit_in_bytes").exists():
                pairs.append(("memory.memsw.limit_in_bytes", value))
            if (directory / _V1_SOCKETS).exists():  # before any process joins: sockets made later count
                pairs.append((_V1_SOCKETS, str(socket_share(limits.memory_bytes))))
            return pairs
        pairs = [("memory.max", value)]
        if (directory / "memory.swap.max").exists():
            pairs.append(("memory.swap.max", "0"))
        return pairs
    if aspect == "pids":
        return [("pids.max", str(limits.pids))]
    assert limits.cpus is not None
    quota = max(1000, int(limits.cpus * _CPU_PERIOD_US))
    if version == 1:
        return [("cpu.cfs_period_us", str(_CPU_PERIOD_US)), ("cpu.cfs_quota_us", str(quota))]
    return [("cpu.max", f"{quota} {_CPU_PERIOD_US}")]


@dataclass
class SessionCgroup:
    """The cgroup(s) of one session: one directory per hierarchy that holds a wanted controller."""

    name: str
    #: (directory, version) per hierarchy, deduplicated (v2 holds every controller in one).
    dirs: list[tuple[Path, int]] = field(default_factory=list)
    #: The memory cgroup, for OOM detection (None without a memory limit).
    memory: tuple[Path, int] | None = None
    #: (directory, its hierarchy's mount point) per entry of `dirs`: a sandbox shows each there.
    points: list[tuple[Path, Path]] = field(default_factory=list)
    #: The memory cgroup's OOM counter file, opened at its first read (`oom_kills`).
    _oom_fd: int | None = None

    @classmethod
    def create(cls, limits: ResourceLimits) -> SessionCgroup | None:
        """Make the session's cgroup for ``limits`` (None when it sets none); `CgroupUnavailableError` when impossible."""
        wanted = _wanted(limits)
        if not wanted:
            return None
        sweep_orphans()
        group = cls(f"{CGROUP_PREFIX}{os.getpid()}-{secrets.token_hex(4)}-n{_pid_namespace()}")
        try:
            for aspect in wanted:
                controller = _CONTROLLER[aspect]
                where = _hierarchy(controller)
                if where is None:
                    raise CgroupUnavailableError(
                        errno.ENOENT, f"no cgroup hierarchy with the {controller} controller is mounted"
                    )
                if where.version == 2:
                    why = _v2_ready(where.own, controller)
                    if why is not None:
                        raise CgroupUnavailableError(errno.EPERM, why)
                directory = where.own / group.name
                if (directory, where.version) not in group.dirs:
                    try:
                        directory.mkdir()
                    except OSError as exc:
                        raise CgroupUnavailableError(
                            exc.errno, f"cannot create cgroup {directory}: {exc.strerror}"
                        ) from exc
                    group.dirs.append((directory, where.version))
                    group.points.append((directory, where.mount))
                for name, value in _settings(where.version, aspect, limits, directory):
                    _write(directory / name, value)
                if aspect == "memory":
                    group.memory = (directory, where.version)
        except BaseException:
            group.remove()
            raise
        return group

    def enter_argv(self) -> list[str]:
        """An argv prefix that joins this cgroup and then execs the rest (``[*prefix, *argv]``)."""
        return [
            _SH,
            "-c",
            _JOIN_SCRIPT,
            "shellrt-cgroup",
            *(str(d / "cgroup.procs") for d, _ in self.dirs),
            "--",
        ]

    def oom_kills(self) -> int:
        """How many processes the kernel's OOM killer ended in this cgroup so far (0 when unknown).

        Read at every command's start (`sandbox._cgroup_limits.OomAwareProcess`), now that every
        root caller's session has a memory ceiling: through an fd kept open, one ``pread`` (the
        kernel regenerates the file at offset 0), 0.5 us against 18 us for an open, read and close."""
        if self.memory is None:
            return 0
        try:
            if self._oom_fd is None:
                directory, version = self.memory
                name = "memory.oom_control" if version == 1 else "memory.events"
                self._oom_fd = os.open(directory / name, os.O_RDONLY | os.O_CLOEXEC)
            text = os.pread(self._oom_fd, 4096, 0).decode()
            for line in text.splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except (OSError, ValueError):
            pass
        return 0

    def remove(self) -> None:
        """Kill anything still inside and remove the cgroup (idempotent; gives up after ~5 s)."""
        fd, self._oom_fd = self._oom_fd, None
        if fd is not None:
            os.close(fd)
        for directory, _ in self.dirs:
            _remove_dir(directory)
        self.dirs = []
        self.points = []


def _pids_in(directory: Path) -> list[int]:
    try:
        return [int(p) for p in (directory / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def _kill_members(directory: Path) -> None:
    """SIGKILL the members of ``directory`` through pidfds, listed again once those are open: a
    member reaped meanwhile may have left its pid to a host process (as `sandbox._proctree.kill_listed`;
    this module stays stdlib-only)."""
    fds: dict[int, int] = {}
    for pid in _pids_in(directory):
        with contextlib.suppress(OSError):
            fds[pid] = os.pidfd_open(pid)
    still = set(_pids_in(directory)) if fds else set()
    for pid, fd in fds.items():
        if pid in still:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(fd, signal.SIGKILL)
        os.close(fd)


def _remove_dir(directory: Path, timeout_s: float = 5.0) -> bool:
    """rmdir ``directory``, SIGKILLing what is left in it first; False when it stays busy."""
    deadline = time.monotonic() + timeout_s
    delay = 0.005
    while True:
        try:
            directory.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError as exc:
            if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                return False
        # pidfds, then the members again: one reaped meanwhile may have left its pid to anyone
        _kill_members(directory)
        time.sleep(delay)
        delay = min(delay * 2, 0.2)


def _pid_namespace() -> int:
    """This process's pid namespace (its inode): an owner pid means something only in it."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def _owner_alive(name: str) -> bool:
    parts = name[len(CGROUP_PREFIX) :].split("-")
    try:
        pid = int(parts[0])
    except ValueError:
        return True  # not ours to judge
    if len(parts) > 2 and parts[2] != f"n{_pid_namespace()}":
        # Made in another pid namespace (a shellrt inside a container or sandbox, or outside
        # ours): its pid is not ours to look up, so a live session is never swept from here.
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_orphans() -> int:
    """Remove session cgroups whose owner process is gone (it was SIGKILLed); returns how many."""
    removed = 0
    seen: set[Path] = set()
    for controller in _CONTROLLER.values():
        where = _hierarchy(controller)
        if where is None or where.own in seen:
            continue
        seen.add(where.own)
        try:
            children = list(where.own.iterdir())
        except OSError:
            continue
        for child in children:
            if child.name.startswith(CGROUP_PREFIX) and child.is_dir() and not _owner_alive(child.name):
                removed += _remove_dir(child, timeout_s=1.0)
    return removed
