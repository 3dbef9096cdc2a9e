"""Nothing a local session started outlives its owner process, however the owner dies.

The local backend has no namespace to hold its processes: a command can
``setsid``, double-fork, clear its environment (erasing the marker variable)
and re-parent to init. Two mechanisms, used together, per owner process:

- **a cgroup (root, cgroup v1 ``pids`` hierarchy)**: at the first local
  sandbox start the owner moves itself into a fresh child cgroup
  ``shellrt-<pid>-<starttime>`` of its current one (limits above it still
  apply), so every process it starts from then on — and everything those
  start — is a member, and no process can leave it without root;
- **a watchdog** (a tiny Python process in its own session, outside the
  cgroup) holding the read end of a pipe whose write end only the owner
  holds. When the owner dies — exit, SIGTERM, or SIGKILL — the pipe hits EOF
  and the watchdog kills every member of the cgroup (until none is left) and
  removes it. Without a cgroup (not root, no v1 ``pids`` hierarchy) the
  watchdog kills every process whose marker variable names this owner: an
  environment-scrubbing process can then escape this net; the per-session
subreaper (`sandbox._reaper`) catches it instead, unless the command killed the
reaper first (documented in docs/security.md).

And when both owner and watchdog were SIGKILLed, the next local sandbox start
(`sweep_orphan_cgroups`) kills the members of every ``shellrt-*`` cgroup
whose owner is gone and removes it.
"""

from __future__ import annotations

import contextlib
import functools
import os
import subprocess
import sys
import time
from pathlib import Path

from sandbox._proctree import kill_listed

__all__ = ["REAPER_VAR", "OwnerGuard", "guard_owner", "owner_marker_token", "sweep_orphan_cgroups"]

_PIDS_MOUNT = Path("/sys/fs/cgroup/pids")
_PREFIX = "shellrt-"

#: The variable marking a local session's reaper (``local-<owner token>``): the watchdog kills what
#: is below it, then it, when the owner dies (`sandbox._reaper`).
REAPER_VAR = "SHELLRT_REAPER_OF"

#: The watchdog: waits for EOF on stdin, then kills the cgroup's members (or marked processes).
_WATCHDOG = f"REAPER_VAR = {REAPER_VAR!r}\n" + r"""
import os, signal, sys, time
cg, token = sys.argv[1], sys.argv[2]
for s in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM, signal.SIGPIPE):
    signal.signal(s, signal.SIG_IGN)
while os.read(0, 4096):
    pass
needle = ("\0SHELLRT_RUN_ID=local-" + token).encode()
reaper_needle = ("\0" + REAPER_VAR + "=local-" + token).encode()
def below(pids):
    # pids and every process below them (each thread's children: a reaper's adopted orphans too),
    # parents first (as /proc lists them), so a parent is not left to run on after its child
    seen, queue = dict.fromkeys(pids), list(pids)
    for p in queue:
        try:
            threads = os.listdir("/proc/%d/task" % p)
        except OSError:
            continue
        for t in threads:
            try:
                with open("/proc/%d/task/%s/children" % (p, t)) as f:
                    kids = [int(k) for k in f.read().split()]
            except (OSError, ValueError):
                continue
            for k in kids:
                if k not in seen:
                    seen[k] = None
                    queue.append(k)
    return list(seen)
def members():
    pids = []
    if cg:
        for d, _, _ in os.walk(cg):  # nested owners' cgroups too: they are the owner's children
            try:
                with open(d + "/cgroup.procs") as f:
                    pids += [int(p) for p in f.read().split()]
            except OSError:
                pass
        return pids
    reapers = set()
    for e in os.listdir("/proc"):
        if e.isdigit():
            try:
                with open("/proc/" + e + "/environ", "rb") as f:
                    env = b"\0" + f.read()
            except OSError:
                continue
            if needle in env:
                pids.append(int(e))
            if reaper_needle in env:
                reapers.add(int(e))
    # A session's reaper (marked apart) and what is below it: a command may have stopped it
    # (kill -STOP $PPID, in a loop), so it never swept its adopted orphans (red team round 49).
    # It is killed last, once nothing is below it: until then orphans still come to it.
    everything = below(pids + list(reapers))
    rest = [p for p in everything if p not in reapers]
    return rest or list(everything)
end = time.monotonic() + 10
while time.monotonic() < end:
    pids = [p for p in members() if p != os.getpid()]
    if not pids:
        break
    fds = {}  # pidfds first, then members again: a member that ended meanwhile may be anyone's pid now
    for p in pids:
        try:
            fds[p] = os.pidfd_open(p)
        except OSError:
            pass
    still = set(members()) if fds else set()
    for p, fd in fds.items():
        if p in still:
            try:
                signal.pidfd_send_signal(fd, signal.SIGKILL)
            except OSError:
                pass
        os.close(fd)
    time.sleep(0.02)
if cg:
    for _ in range(100):
        for d, _, _ in sorted(os.walk(cg), key=lambda w: -len(w[0])):
            try:
                os.rmdir(d)
            except OSError:
                pass
        if not os.path.exists(cg):
            break
        time.sleep(0.05)
"""


def owner_marker_token() -> str:
    """This process's part of every local marker (``local-<token>…``): what the watchdog matches."""
    return f"{os.getpid()}x"


def _start_time(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        return int(stat[stat.rfind(b")") + 2 :].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def _own_pids_cgroup() -> Path | None:
    """This process's directory in the v1 ``pids`` hierarchy (None when there is none)."""
    if not (_PIDS_MOUNT / "cgroup.procs").exists():
        return None
    try:
        with open("/proc/self/cgroup") as f:
            for line in f:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                if "pids" in controllers.split(","):
                    return _PIDS_MOUNT / path.lstrip("/")
    except (OSError, ValueError):
        return None
    return None


class OwnerGuard:
    """The owner's cgroup (if any) and its watchdog; see the module docstring."""

    def __init__(self, cgroup: Path | None, watchdog: subprocess.Popen[bytes], pipe_w: int) -> None:
        self.cgroup = cgroup
        self.watchdog = watchdog
        self._pipe_w = pipe_w
        self.pid = os.getpid()


_GUARD: OwnerGuard | None = None


def guard_owner() -> OwnerGuard | None:
    """Set up this process's guard once (idempotent; None when even a watchdog cannot start)."""
    global _GUARD
    if _GUARD is not None and _GUARD.pid == os.getpid():
        return _GUARD
    sweep_orphan_cgroups()
    cgroup = _make_cgroup()
    pipe_r, pipe_w = os.pipe2(os.O_CLOEXEC)
    try:
        watchdog = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _WATCHDOG, str(cgroup or ""), owner_marker_token()],  # -I: no cwd on sys.path
            stdin=pipe_r,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd="/",  # not the caller's (a workspace): relative LD_PRELOAD entries resolve there (round 49)
            start_new_session=True,
            close_fds=True,
        )
    except OSError:
        os.close(pipe_w)
        if cgroup is not None:
            with contextlib.suppress(OSError):
                cgroup.rmdir()
        return None
    finally:
        os.close(pipe_r)
    if cgroup is not None:
        try:
            (cgroup / "cgroup.procs").write_text(str(os.getpid()))
        except OSError:
            cgroup = None
    _GUARD = OwnerGuard(cgroup, watchdog, pipe_w)
    return _GUARD


def _make_cgroup() -> Path | None:
    if os.geteuid() != 0:
        return None
    parent = _own_pids_cgroup()
    if parent is None:
        return None
    me = os.getpid()
    path = parent / f"{_PREFIX}{me}-{_start_time(me)}"
    try:
        path.mkdir(exist_ok=True)
    except OSError:
        return None
    return path


def sweep_orphan_cgroups() -> list[Path]:
    """Kill the members of ``shellrt-*`` cgroups whose owner is gone, and remove them; returns them."""
    if os.geteuid() != 0:
        return []
    parents = {p for p in (_own_pids_cgroup(), _PIDS_MOUNT if _PIDS_MOUNT.is_dir() else None) if p}
    removed: list[Path] = []
    for parent in parents:
        try:
            candidates = [p for p in parent.iterdir() if p.name.startswith(_PREFIX) and p.is_dir()]
        except OSError:
            continue
        for path in candidates:
            if _owner_alive(path.name):
                continue
            if _empty_cgroup(path):
                removed.append(path)
    return removed


def _owner_alive(name: str) -> bool:
    try:
        pid_text, start_text = name[len(_PREFIX) :].split("-", 1)
        pid = int(pid_text)
    except ValueError:
        return True  # not one of ours: leave it
    if not start_text.isdigit():
        # A bwrap session's cgroup (`sandbox._cgroup`: shellrt-<pid>-<token>-n<ns>) shares the
        # prefix and the pids hierarchy: judged by its start time it looked dead, and every
        # local start SIGKILLed the live session's commands and removed its cgroup.
        return True
    return str(_start_time(pid)) == start_text


def _empty_cgroup(path: Path) -> bool:
    """Kill every member of ``path`` and of the cgroups nested in it, then remove them (deepest first)."""
    end = time.monotonic() + 5
    while time.monotonic() < end:
        dirs = sorted((Path(d) for d, _, _ in os.walk(path)), key=lambda d: -len(d.parts))
        pids = _listed(dirs)
        if not pids:
            for d in dirs:
                with contextlib.suppress(OSError):
                    d.rmdir()
            if not path.exists():
                return True
        kill_listed(pids, functools.partial(_listed, dirs))  # pidfds: a member reaped meanwhile is no target
        time.sleep(0.02)
    return False


def _listed(dirs: list[Path]) -> list[int]:
    pids: list[int] = []
    for d in dirs:
        try:
            pids += [int(p) for p in (d / "cgroup.procs").read_text().split()]
        except OSError:
            continue
    return pids
