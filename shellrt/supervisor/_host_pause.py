"""Pause a session's sandboxed processes while shellrt runs a host program of its own (a hook).

Why: hooks run on the host, outside the sandbox, and the programs they run obey workspace files
(``git status`` runs ``.git/config``'s ``core.fsmonitor``). Before each hook the protected-files
sweep reverts what commands planted there, but a background task rewriting ``.git/config`` in a
loop planted it again between the sweep and the hook's ``git``: the operator's hook script ran the
command's program on the host as the operator (red team round 37: bwrap as root, the first call).
So every process in the pid namespace of a running command (and below it) is stopped first, the
sweep runs on a still tree, the hook runs, then they go on.

Only namespaces other than shellrt's own are paused: on the local backend commands share the
host's namespace (local is no boundary) and stopping "everything in ours" would stop the host.
Each process is held by a pidfd from the stop to the continue, so a pid reused meanwhile is never
signalled; a process already stopped (by the command itself) is left stopped, and looked at again
each pass (a sibling not yet stopped may continue it). What cannot be held (no descriptor left for a
pidfd, a signal refused) refuses the pause: never "all still" with one running (round 38).
A watcher process holds each one too, and kills them should shellrt die before it continues
them (`_host_pause_watch`: a docker container stayed stopped for good, round 39).
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import signal
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import anyio

from sandbox._proctree import stat_fields
from shellrt.supervisor import _host_pause_watch as _watch
from shellrt.supervisor._host_pause_peers import Reach

__all__ = ["HostQuiet", "Paused", "Reach", "Running", "busy_elsewhere", "pause", "pause_running", "resume"]

#: Passes over ``/proc`` before giving up on a tree that keeps starting processes.
_MAX_PASSES = 64
#: How long the stops may take to land (a stopped process cannot fork or write).
_SETTLE_S = 2.0
#: How long a running command's host pid is looked for (a zygote's command shows up a moment after
#: its start returned; its own wait is 0.2 s, too short under load).
_PID_FIND_S = 2.0


class _HasPid(Protocol):
    @property
    def pid(self) -> int | None: ...


class Running(Protocol):
    """A running command or task as the supervisor holds it (`Execution`)."""

    @property
    def process(self) -> _HasPid: ...

    @property
    def status(self) -> object: ...


_keys = itertools.count(1)


@dataclass
class Paused:
    """What `pause` stopped (to continue) and why it could not (None: all still). Its processes are
    held by the watcher (`_host_pause_watch`) under ``key`` too: killed if shellrt dies first."""

    fds: dict[int, int] = field(default_factory=dict)
    failure: str | None = None
    key: bytes = field(default_factory=lambda: _watch.key_for(next(_keys)))


class HostQuiet:
    """Pauses shared by host programs that overlap (two calls' hooks at once): what each stopped is
    continued only when the last of them ends, or the first to end let the tree run under the other's
    hook. Entered before its pause is awaited and left with no await, so none slips between. A
    command that starts meanwhile waits for `ended` (it would run under the hook: round 38)."""

    def __init__(self) -> None:
        self.holders = 0
        self.paused: list[Paused] = []
        #: The reach of each hook's session while it holds the pause: whose starts wait.
        self.reaches: list[Reach] = []
        self._ended: anyio.Event | None = None

    def leave(self) -> None:
        """One holder less; the last continues everything (a few syscalls: no thread, no await)."""
        self.holders -= 1
        if self.holders == 0:
            held, self.paused = self.paused, []
            for paused in held:
                resume(paused)
            if self._ended is not None:
                self._ended.set()
                self._ended = None

    async def ended(self) -> None:
        """Return once no host program holds the pause (at once when none does)."""
        while self.holders:
            if self._ended is None:
                self._ended = anyio.Event()
            await self._ended.wait()

    async def ended_for(self, reach: Reach) -> None:
        """Return once no host program of a session ``reach`` overlaps holds the pause (one of another
        session's does not hold this session's starts, but the wait is for all: one event)."""
        while self.holders and any(reach.overlaps(held) for held in self.reaches):
            await self.ended()


class _Session(Protocol):
    """A live session as the pause sees one of another thread (`Supervisor`)."""

    #: Starts past the hooks' gate not yet live (read before `_busy`: one leaves it once live).
    _entering: int

    def _reach(self) -> Reach: ...

    def _busy(self) -> bool: ...


def busy_elsewhere(
    neighbours: Mapping[int, Iterable[_Session]], key: int, reach: Reach, tries: int = 3
) -> str | None:
    """Why a hook of thread ``key`` cannot run: a session of another thread whose roots overlap
    ``reach`` runs commands or tasks (None: none does). Those are not paused (a pause's events and
    its shared stops belong to one event loop), and one rewrote ``.git/config`` under the hook while
    the pause said all were still (53 KB in 0.5 s; round 39). Racing another thread's changes is
    read again, then refused (fail closed). Called once the hook is in the supervisor's ``_HOOKS``:
    a session idle now that starts later waits for the hook's end (one idle here started a command
    that ran under the whole hook: round 39 review8); one starting now counts in ``_entering``."""
    for _ in range(tries):
        try:
            for other, sessions in list(neighbours.items()):
                if other != key and any(
                    (s._entering > 0 or s._busy()) and reach.overlaps(s._reach()) for s in list(sessions)
                ):
                    return (
                        "a session of another thread of this process on an overlapping workspace runs "
                        "commands or background tasks, which a hook of this thread cannot pause"
                    )
            return None
        except RuntimeError:  # a dict or set changed size under us: its thread moved on
            continue
    return "the sessions of other threads of this process could not be read"


def _ns(pid: int | str) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def _stat(pid: int) -> tuple[int, str] | None:
    """``(ppid, state)`` of ``pid`` (None when gone)."""
    fields = stat_fields(pid)
    return (int(fields[1]), fields[0].decode()) if fields is not None and len(fields) > 1 else None


def _table() -> dict[int, tuple[int, str]]:
    table: dict[int, tuple[int, str]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (found := _stat(int(entry))) is not None:
            table[int(entry)] = found
    return table


def _members(table: dict[int, tuple[int, str]], seeds: Iterable[int], own: str | None) -> set[int]:
    """The processes to stop: every process in a pid namespace (not ours) of a seed or of a seed's
    descendant, and every descendant of those (a nested namespace's processes)."""
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    spaces: dict[int, str | None] = {}

    def ns(pid: int) -> str | None:  # one readlink a process a pass
        if pid not in spaces:
            spaces[pid] = _ns(pid)
        return spaces[pid]

    def below(roots: Iterable[int]) -> set[int]:
        seen: set[int] = set()
        todo = list(roots)
        while todo:
            pid = todo.pop()
            if pid not in seen:
                seen.add(pid)
                todo.extend(children.get(pid, ()))
        return seen

    theirs = {space for pid in below(seeds) if (space := ns(pid)) is not None and space != own}
    if not theirs:
        return set()
    inside = {pid for pid in table if ns(pid) in theirs}
    return {pid for pid in below(inside) if ns(pid) != own}


def pause_running(quiet: HostQuiet, running: Sequence[Running]) -> str | None:
    """Pause ``running`` under ``quiet`` (in a thread); why not all (None: all still). Recorded in
    ``quiet`` here, so a cancelled wait still continues it. A running command whose process was not
    found is a failure: it was no seed and ran under the hook (round 38)."""
    seeds, unfound = _host_pids(running)
    paused = pause(seeds) if seeds else Paused()
    quiet.paused.append(paused)
    if unfound and paused.failure is None:
        return f"{unfound} of its commands had no process to stop yet"
    return paused.failure


def _host_pids(running: Sequence[Running]) -> tuple[list[int], int]:
    """The host pids of ``running`` and how many still running had none after `_PID_FIND_S`."""
    deadline = time.monotonic() + _PID_FIND_S
    pids: list[int] = []
    unfound = 0
    for one in running:
        while (pid := one.process.pid) is None and one.status is None:
            if time.monotonic() > deadline:
                unfound += 1
                break
            time.sleep(0.005)
        if pid is not None:
            pids.append(pid)
    return pids, unfound


def pause(seeds: Iterable[int]) -> Paused:
    """Stop every process of the running commands ``seeds`` (host pids) started, until `resume`.

    Never raises for what it met on the way (a descriptor short, ``/proc`` unreadable): the
    failure says so and what was stopped is in the result, for `resume`."""
    paused = Paused()
    own = _ns("self")
    seeds = list(seeds)
    if own is None or not seeds:
        return paused
    try:
        paused.failure = _stop_all(paused, seeds, own)
    except OSError as exc:
        paused.failure = f"its processes could not be listed ({exc.strerror or exc})"
    except BaseException:
        resume(paused)
        raise
    return paused


def _stop_all(paused: Paused, seeds: list[int], own: str) -> str | None:
    skip: set[int] = set()  # stopped by the command itself, or gone: not ours to continue
    settled = False
    for _ in range(_MAX_PASSES):
        table = _table()
        # One stopped at a scan may have been continued since by one not yet stopped: again.
        skip = {pid for pid in skip if pid in table and table[pid][1] in "TtZX" and _threads_still(pid, False)}
        fresh = [pid for pid in _members(table, seeds, own) if pid not in paused.fds and pid not in skip]
        if not fresh:
            # Done when a scan after every stop landed finds none: a process stopped inside ``clone``
            # may have made a child after the scan that found nothing.
            if settled:
                return None
            failure = _settle(paused)
            if failure is not None:
                return failure
            settled = True
            continue
        settled = False
        for pid in fresh:
            if table[pid][1] in "TtZX" and _threads_still(pid, child_stopped=False):
                skip.add(pid)
                continue
            failure = _stop(paused, pid, own, skip)
            if failure is not None:
                return failure
    return f"its processes kept starting new ones through {_MAX_PASSES} passes"


def _stop(paused: Paused, pid: int, own: str, skip: set[int]) -> str | None:
    """Stop ``pid`` through a pidfd held in ``paused``; gone or reused goes to ``skip``. Anything
    else (no descriptor left, a signal refused) is why the pause fails: it would run on."""
    try:
        fd = os.pidfd_open(pid)
    except OSError as exc:
        if exc.errno == errno.ESRCH:
            skip.add(pid)
            return None
        return f"process {pid} could not be held ({exc.strerror or exc})"
    if _ns(pid) in (None, own):  # gone, or reused between the scan and the open
        os.close(fd)
        skip.add(pid)
        return None
    try:  # before the stop: shellrt killed at any moment after it leaves none stopped (round 39)
        _watch.hold(paused.key, fd)
    except _watch.WatchError as exc:
        os.close(fd)
        return str(exc)
    try:
        signal.pidfd_send_signal(fd, signal.SIGSTOP)
    except OSError as exc:
        os.close(fd)
        if exc.errno == errno.ESRCH:
            skip.add(pid)
            return None
        return f"process {pid} could not be stopped ({exc.strerror or exc})"
    paused.fds[pid] = fd
    return None


def _settle(paused: Paused) -> str | None:
    """Wait until each stopped process is seen still (a signal lands asynchronously).

    A shell inside ``vfork`` (``posix_spawn``) whose child we stopped before its ``exec`` waits in
    the kernel (state ``D``) and takes no signal until the child goes on: it is as still."""
    deadline = time.monotonic() + _SETTLE_S
    left = set(paused.fds)
    while left:
        states = {pid: _stat(pid) for pid in paused.fds}
        # The parents of stopped children: one in ``D`` waits for its vfork child.
        waiting = {found[0] for found in states.values() if found is not None and found[1] in "Tt"}
        if any((found := states[pid]) is not None and found[1] == "D" and pid not in waiting for pid in left):
            # A child another pause stopped (overlapping hooks share the tree, each its own stops):
            # its vfork parent waits on it just the same.
            waiting |= {ppid for ppid, state in _table().values() if state in "Tt"}
        left = {
            pid
            for pid in left
            if not (_still(states[pid], pid in waiting) and _threads_still(pid, child_stopped=pid in waiting))
        }
        if not left:
            return None
        if time.monotonic() > deadline:
            return f"{len(left)} of its processes did not stop within {_SETTLE_S:g}s"
        time.sleep(0.001)
    return None


def _still(found: tuple[int, str] | None, child_stopped: bool) -> bool:
    """Whether a process (its `_stat`) can do nothing: gone, stopped, dead, or in the kernel's
    vfork wait for a child we stopped."""
    return found is None or found[1] in "TtZX" or (found[1] == "D" and child_stopped)


def _threads_still(pid: int, child_stopped: bool) -> bool:
    """Whether every thread of ``pid`` is still (`_still`): ``/proc/<pid>/stat`` is its main
    thread's state only, and a thread mid-``write`` (or one a tracer holds the main thread of) ran
    on and wrote after a pause said all were still (round 38)."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:  # gone
        return True
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat", "rb") as stat:
                state = stat.read().rsplit(b")", 1)[1].split()[0].decode()
        except (OSError, IndexError):  # the thread ended
            continue
        if not _still((0, state), child_stopped):
            return False
        if state == "D" and not _in_vfork_wait(f"/proc/{pid}/task/{tid}"):
            return False
    return True


#: What ``wchan`` names for a thread in the kernel's vfork wait (``wait_for_vfork_done`` is inlined
#: into ``kernel_clone`` here, kernel 6.18; older kernels name ``_do_fork``/``do_fork``).
_VFORK_WAITS = frozenset({b"kernel_clone", b"wait_for_vfork_done", b"_do_fork", b"do_fork"})


def _in_vfork_wait(task: str) -> bool:
    """Whether a thread in ``D`` waits for its vfork child (the one ``D`` a stopped child explains).
    Any other ``D`` (a direct write waiting on the disk, a lock) goes on once it ends, within the
    same syscall: a process with a stopped child beside it counted still, and its write landed
    after the pause (round 38 review3). Unreadable: not known to be one (the pause waits)."""
    try:
        with open(f"{task}/wchan", "rb") as wchan:
            return wchan.read().strip() in _VFORK_WAITS
    except OSError:
        return False


def resume(paused: Paused) -> None:
    """Continue what `pause` stopped (through its pidfds: never a reused pid), then release the
    watcher's hold (after: shellrt killed between the two leaves the continued ones killed)."""
    for fd in paused.fds.values():
        with contextlib.suppress(OSError):
            signal.pidfd_send_signal(fd, signal.SIGCONT)
        os.close(fd)
    paused.fds.clear()
    _watch.drop(paused.key)  # also what it held of a stop that failed
