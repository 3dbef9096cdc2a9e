"""Find and kill every process a run started, including the ones that escaped its process group.

A process group is not enough: ``setsid`` and double-forked grandchildren leave
the group, and orphans are reparented to init, so ``children()`` of the shell no
longer finds them. Three nets, used together:

1. ``killpg`` on the run's own process group (the shell is started with
   ``start_new_session``) — one syscall, catches ordinary children;
2. descendants recorded while the run was alive (`ProcessTree.record`, polled
   by the backend: one `process_table` snapshot per poll serves every live
   run, so the cost does not grow with the number of background tasks) —
   catches ``setsid`` children that are still below the shell;
3. a sweep of ``/proc/*/environ`` for the run's unique marker variable — catches
   double-forked orphans now parented by init (they inherit the environment).

A process that both escapes the group *and* scrubs its environment (``env -i``)
*and* detaches before the first poll can escape these nets; as root the local
backend also keeps its processes in a cgroup (`sandbox._cgroup`), which nothing
inside can leave; on local every command also starts below a per-session
subreaper (`sandbox._reaper`), which adopts such orphans and kills them when the
session is idle or closes; the bwrap and docker backends close that gap with a pid
namespace / container.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator

__all__ = [
    "MARKER_VAR",
    "ProcessTree",
    "is_alive",
    "kill_checked",
    "kill_listed",
    "kill_marked",
    "last_pid",
    "pids_with_marker",
    "process_table",
    "read_proc",
    "scan_markers",
    "start_time",
    "stat_fields",
]

#: Environment variable carrying the per-run marker that `pids_with_marker` sweeps for.
MARKER_VAR = "SHELLRT_RUN_ID"

#: Laid over every command's environment by every backend (`sandbox._hostproc.child_env` for
#: local and bwrap, the docker request, the lean ``shellrt run``), over whatever the caller gave. ``GIT_OPTIONAL_LOCKS=0``:
#: ``git status`` and other reads then skip refreshing ``.git/index`` (taking index.lock and
#: rewriting it), which made a command judged read-only change a file and race a concurrent
#: ``git add`` on the lock (red team, round 13). A command may still set it itself
#: (``GIT_OPTIONAL_LOCKS=1 git status``), and is then not judged read-only.
COMMAND_ENV: dict[str, str] = {"GIT_OPTIONAL_LOCKS": "0"}


def read_proc(path: str) -> bytes:
    """The whole of a /proc file, by descriptor: a Python file object costs four more system calls
    per file (fstat twice, TCGETS, lseek), and the poller and the sweeps read one per process.
    Read to the end (not up to a newline: a process may put one in its own ``comm``)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def is_alive(pid: int) -> bool:
    """True when ``pid`` exists and is not a zombie (a zombie is dead, just not reaped)."""
    try:
        stat = read_proc(f"/proc/{pid}/stat")
    except OSError:
        return False
    # Format: "pid (comm) S ..." — comm may contain spaces/parens, so split at the last ')'.
    state = stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3]
    return state not in (b"Z", b"X", b"x")


def stat_fields(pid: int | str) -> list[bytes] | None:
    """The fields of ``/proc/<pid>/stat`` after ``comm`` (state first), or None when it is gone.

    One ``read`` when the line is shorter than the buffer (always, in practice: ``comm`` is at most
    15 bytes): the socket watch runs this for each session command's processes before every command
    (issue 22), and a second ``read`` only to see the end cost a system call each."""
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        stat = os.read(fd, _STAT_READ)
        while len(stat) % _STAT_READ == 0 and (more := os.read(fd, _STAT_READ)):
            stat += more
    except OSError:
        return None
    finally:
        os.close(fd)
    return stat[stat.rfind(b")") + 2 :].split()


#: One read of ``/proc/<pid>/stat`` (a line of ~300 bytes).
_STAT_READ = 4096


def _parse_stat(stat: bytes) -> tuple[int, int] | None:
    """``(ppid, starttime)`` from a ``/proc/<pid>/stat`` line (None when unreadable)."""
    fields = stat[stat.rfind(b")") + 2 :].split()
    try:
        return int(fields[1]), int(fields[19])
    except (IndexError, ValueError):
        return None


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks (its identity with the pid), or None when gone."""
    try:
        parsed = _parse_stat(read_proc(f"/proc/{pid}/stat"))
    except OSError:
        return None
    return None if parsed is None else parsed[1]


def _pids_above(min_pid: int) -> Iterator[int]:
    """Pids in ``/proc`` above ``min_pid``: the one walk both scans share."""
    try:
        entries = os.listdir("/proc")
    except OSError:  # pragma: no cover - /proc is always there on Linux
        return
    for entry in entries:
        if entry.isdigit() and int(entry) > min_pid:
            yield int(entry)


def process_table(min_pid: int = 0) -> dict[int, tuple[int, int]]:
    """``pid -> (ppid, starttime)`` of every process (pids at or below ``min_pid`` skipped), one /proc pass."""
    table: dict[int, tuple[int, int]] = {}
    for pid in _pids_above(min_pid):
        try:
            parsed = _parse_stat(read_proc(f"/proc/{pid}/stat"))
        except OSError:
            continue
        if parsed is not None:
            table[pid] = parsed
    return table


def last_pid() -> int | None:
    """The pid the kernel allocated last in our pid namespace (None when unknown)."""
    try:
        return int(read_proc("/proc/sys/kernel/ns_last_pid"))
    except (OSError, ValueError):
        return None


def scan_markers(min_pid: int = 0) -> dict[int, str]:
    """Every process (other than ours) carrying ``MARKER_VAR``, with its marker value.

    One pass over ``/proc/*/environ`` (about 15 µs per process here). ``min_pid``
    skips pids at or below it without reading them: the descendants of a root
    started as pid ``r`` all have pids above ``r`` until the pid counter wraps
    (the caller checks that it did not, see `HostRunner`).
    """
    needle = f"\0{MARKER_VAR}=".encode()
    me = os.getpid()
    found: dict[int, str] = {}
    for pid in _pids_above(min_pid):
        if pid == me:
            continue
        try:
            env = b"\0" + read_proc(f"/proc/{pid}/environ")
        except OSError:
            continue
        at = env.find(needle)
        if at < 0:
            continue
        start = at + len(needle)
        stop = env.find(b"\0", start)
        found[pid] = env[start : stop if stop >= 0 else len(env)].decode("utf-8", "replace")
    return found


def pids_with_marker(marker: str, *, prefix: bool = False) -> list[int]:
    """Pids whose marker equals ``marker`` (or starts with it, when ``prefix``).

    A prefix (a backend's id) lets the final sweep at close catch every run of
    that backend; per-run sweeps match exactly, so run 1 never hits run 12.
    """
    return [
        pid
        for pid, value in scan_markers().items()
        if (value.startswith(marker) if prefix else value == marker)
    ]


def kill_checked(pid: int, still_it: Callable[[int], bool]) -> None:
    """SIGKILL ``pid`` only if ``still_it(pid)`` holds, through a pidfd: never a reused pid.

    The pidfd is opened first and the check made after: a check that passes read the process
    the pidfd names (or that process died meanwhile, and the signal reaches nobody). A plain
    ``kill(pid)`` after a check hit whoever got the number in between (pids wrap: ``pid_max``
    is 32768 on many hosts; red team, round 15).
    """
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        return  # gone (or not ours to open): nothing to kill
    try:
        if still_it(pid):
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(fd, signal.SIGKILL)
    finally:
        os.close(fd)


def kill_listed(pids: Iterable[int], listed_now: Callable[[], Iterable[int]]) -> None:
    """SIGKILL each of ``pids`` (a listing, e.g. a cgroup's members) that ``listed_now()`` still lists.

    Pidfds are opened for the whole snapshot first, then the listing is read once more: a pid
    listed after its pidfd was opened names a process that is (or was, and died: the signal
    reaches nobody) the listed one. A member that exited and was reaped by init meanwhile is
    not in the new listing, whoever got its pid (red team, round 15).
    """
    fds: dict[int, int] = {}
    try:
        for pid in pids:
            with contextlib.suppress(OSError):
                fds[pid] = os.pidfd_open(pid)
        if not fds:
            return
        still = set(listed_now())
        for pid, fd in fds.items():
            if pid in still:
                with contextlib.suppress(OSError):
                    signal.pidfd_send_signal(fd, signal.SIGKILL)
    finally:
        for fd in fds.values():
            os.close(fd)


def _started_at(started: int) -> Callable[[int], bool]:
    return lambda pid: start_time(pid) == started


def _marker_of(pid: int) -> str | None:
    needle = f"\0{MARKER_VAR}=".encode()
    try:
        env = b"\0" + read_proc(f"/proc/{pid}/environ")
    except OSError:
        return None
    at = env.find(needle)
    if at < 0:
        return None
    start = at + len(needle)
    stop = env.find(b"\0", start)
    return env[start : stop if stop >= 0 else len(env)].decode("utf-8", "replace")


def kill_marked(pids: Iterable[int], accept: Callable[[str], bool]) -> None:
    """SIGKILL each of ``pids`` (found by a marker scan) that still carries a marker ``accept`` takes.

    The scan and the kill are apart in time: the marker is read again through the pid's pidfd
    (`kill_checked`), so a pid that ended and was reused meanwhile is left alone.
    """
    for pid in pids:
        kill_checked(pid, lambda p: (m := _marker_of(p)) is not None and accept(m))


class ProcessTree:
    """Every process of one run: its group, its recorded descendants and its marker.

    ``root_pid`` must lead its own session (``start_new_session=True``), so the
    process group id equals ``root_pid``. Thread-safe: a backend's poller
    thread records while the event loop kills.
    """

    def __init__(
        self, root_pid: int, marker: str, root_pidfd: int | None = None, *, open_pidfd: bool = True
    ) -> None:
        """``root_pidfd`` (owned from now on): a pidfd of the root, for a root someone else may
        reap (the session reaper); else one is opened here (the root being the caller's unreaped
        child), unless ``open_pidfd`` is False: the caller then hands one over (`set_root_pidfd`)."""
        self.root_pid = root_pid
        self.marker = marker
        #: pid -> start time (clock ticks), so a recycled pid is never killed by mistake.
        self._known: dict[int, int] = {}
        self._lock = threading.Lock()
        if root_pidfd is None and open_pidfd:
            with contextlib.suppress(OSError):
                root_pidfd = os.pidfd_open(root_pid)
        #: The root while it is unreaped (its pid, and the group id, cannot be reused): closed at
        #: the first sign of its reap. None: reaped, or no pidfd (then the group is never signalled).
        self._root_fd = root_pidfd
        #: The group was killed after the root exited, before its reap (`kill_group(at_exit=True)`):
        #: a group whose leader is dead gets no new member but by fork from a member, all killed.
        self._group_emptied = False

    def set_root_pidfd(self, fd: int) -> None:
        """Own ``fd``, a pidfd of the root taken while it was unreaped (a dup of the caller's: a
        second ``pidfd_open`` per command costs more than a ``dup``)."""
        with self._lock:
            old, self._root_fd = self._root_fd, fd
        if old is not None:
            os.close(old)

    def root_unreaped(self) -> bool:
        """The root has not been reaped (alive, or a zombie): its pid and group id are still its own."""
        with self._lock:
            return self._root_pinned()

    def _root_pinned(self) -> bool:
        fd = self._root_fd
        if fd is None:
            return False
        try:
            signal.pidfd_send_signal(fd, 0)
        except OSError:
            self._root_fd = None
            os.close(fd)
            return False
        return True

    def unpin_root(self) -> None:
        """The root's end is known (its status taken): let its pidfd go. A later kill of the group
        asks `_group_id_unclaimed` instead, as after any reap. Kept, it held a descriptor for as
        long as the run's handle lived: an ended background task's, for the session's life (red
        team round 42, supervisor2)."""
        with self._lock:
            fd, self._root_fd = self._root_fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)

    def _group_id_unclaimed(self) -> bool:
        """The root is reaped: its group id still names its group (members left, which keep the
        number from reuse) only while no process has that pid. A process that has it got the
        number after the group emptied: the group is gone, and ``killpg`` would hit the new
        owner's. (A new process taking the number between this check and the ``killpg`` is the
        window left: microseconds, against the seconds a reaped root's kill could come late.)"""
        try:
            fd = os.pidfd_open(self.root_pid)
        except ProcessLookupError:
            return True
        except OSError:  # a thread has that id now (EINVAL), or we may not look: not the group's
            return False
        os.close(fd)
        return False

    def __del__(self) -> None:
        fd, self._root_fd = getattr(self, "_root_fd", None), None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)

    def record(self, table: dict[int, tuple[int, int]] | None = None) -> None:
        """Remember the current descendants of the root, from ``table`` (a fresh `process_table` if None)."""
        if table is None:
            table = process_table()
        if self.root_pid not in table or not self.root_unreaped():
            # Unreaped after the snapshot, so unreaped during it: ``root_pid``'s children in the
            # table are the root's. Once reaped, the pid may be anyone's (round 15).
            return
        children: dict[int, list[int]] = {}
        for pid, (ppid, _) in table.items():
            children.setdefault(ppid, []).append(pid)
        found: list[int] = []
        stack = [self.root_pid]
        while stack:
            for child in children.get(stack.pop(), ()):
                found.append(child)
                stack.append(child)
        if not found:
            return
        with self._lock:
            for pid in found:
                self._known.setdefault(pid, table[pid][1])

    def kill_group(self, *, at_exit: bool = False) -> None:
        """SIGKILL the process group and every recorded descendant (cheap: no /proc sweep).

        ``at_exit``: the caller saw the root exited and has not reaped it. The group only while
        its id is the group's: the root unreaped, or reaped and its pid no
        process's (members left keep the number; once the group is empty too, another process
        and its group may get it). The owner kills an exited root's group before it reaps it
        (`HostProcess._poll`).
        """
        with self._lock:
            if self._group_emptied:
                pass  # killed when the root had exited, unreaped: nothing can have joined since
            elif self._root_pinned() or self._group_id_unclaimed():
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.root_pid, signal.SIGKILL)
                self._group_emptied = at_exit and self._root_fd is not None
            known = list(self._known.items())
        for pid, started in known:
            if start_time(pid) == started:
                kill_checked(pid, _started_at(started))
            else:
                with self._lock:
                    self._known.pop(pid, None)

    def kill_all(self, *, deadline_s: float = 2.0) -> bool:
        """Kill everything of the run, sweeping until nothing is left; True when all are gone.

        Blocking (it sleeps a few ms between rounds): call it from a worker thread.
        """
        end = time.monotonic() + deadline_s
        while True:
            self.record()
            self.kill_group()
            kill_marked(pids_with_marker(self.marker), self.marker.__eq__)
            time.sleep(0.002)
            with self._lock:
                known = list(self._known)
            survivors = [p for p in known if is_alive(p)]
            survivors += [p for p in pids_with_marker(self.marker) if is_alive(p)]
            if not survivors:
                return True
            if time.monotonic() >= end:
                return False
            time.sleep(0.01)

    def sweep_marker(self) -> None:
        """Kill escaped processes still carrying the marker (after the root exited normally)."""
        kill_marked(pids_with_marker(self.marker), self.marker.__eq__)
