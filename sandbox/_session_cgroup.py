"""A per-session cgroup for the local backend: the reaper's guarantee without its process hop.

`sandbox._reaper` keeps what a command leaves behind (``(setsid env -i sleep 1000 &)``:
out of its process group, marker scrubbed, re-parented to init) below a per-session
subreaper process, at the price of a socket round trip to another interpreter per
command (its Python, marshal, fd passing, and two wake-ups of another process).

Where the owner has a cgroup of its own (root, a cgroup v1 ``pids`` hierarchy: see
`sandbox._ownerguard`), each session gets a child cgroup of it instead, and one
**spawner thread** of the owner that lives in it (cgroup v1 places threads one by
one): commands are vfork+exec'd by that thread (`sandbox._spawn`), so each is a
member from its first instruction, and every process it starts, however it
detaches, is one too (only root can leave a cgroup). The event loop's thread hands
the start over and blocks until it is done, as a direct vfork would block it.

Why a thread and not the loop's own thread moved in for each fork: a cgroup v1
migration takes a lock whose writer waits for an RCU grace period once writes stop
for a while -- 15 us back to back, but ~14 ms per start measured here with 50 ms
between starts (an agent's calls are seconds apart). The spawner thread migrates once.

**A cgroup per running command** (red team round 45): the spawner thread forks each command in
a child cgroup of the session's (``c<n>``) that holds no other running command and nothing left
behind; where its current one does (a background task runs there), it first moves on to a fresh
one. So what a command leaves is told from what another running command left: before, one
cgroup held both, and a foreground command's leftover (``setsid env -i sleep``) lived as long
as any background task ran. One command at a time (the usual session, warm shells included)
never moves: a move costs ~0.1-0.2 ms of CPU and, when moves are seconds apart, ~10 ms of
waiting for an RCU grace period (the wait measured below, for the thread's one join).

Then, as with the reaper:

- when a command ends, every member of its cgroup, and of any other cgroup no running command
  was started in, is killed (`kill_if_idle`), whatever else of the session runs: a leftover dies
  with its command, at the latest at close, when the cgroups are emptied and removed;
- when the owner dies, its watchdog empties the owner cgroup and those nested in it,
  this one included, and the next start sweeps what a killed watchdog left.

The owner's own process is never killed (its spawner thread is a member).
"""

from __future__ import annotations

import _thread
import contextlib
import functools
import os
import secrets
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar

from sandbox._proctree import kill_listed

__all__ = ["SessionCgroup", "open_session_cgroup"]

#: How long emptying the cgroup may take (processes fork while they are killed).
_KILL_DEADLINE_S = 5.0
#: How long the spawner thread may take to join the cgroup.
_JOIN_TIMEOUT_S = 10.0


def _reset_on_fork() -> None:
    """``SCHED_RESET_ON_FORK`` on the calling (spawner) thread, keeping its policy and priority.

    A command of the caller's uid may raise this thread's priority (the kernel checks the target's
    ``RLIMIT_RTPRIO``/``RLIMIT_NICE``: the caller's), and every later command it forks inherited a
    real-time policy or a negative nice that `calm_prefix` (which reads the loop's thread) never
    saw (red team round 37, lead). With the flag each child starts under SCHED_OTHER at nice >= 0;
    without ``CAP_SYS_NICE`` nobody can drop it (the kernel refuses a change that does). The
    session's reaper (`sandbox._reaper`) sets it on itself the same way. Where the kernel refuses,
    the loop-side prefix still covers the caller's own state."""
    policy = os.sched_getscheduler(0)
    if not policy & os.SCHED_RESET_ON_FORK:
        with contextlib.suppress(OSError):
            os.sched_setscheduler(0, policy | os.SCHED_RESET_ON_FORK, os.sched_getparam(0))


class _HasPid(Protocol):
    pid: int


_Started = TypeVar("_Started", bound=_HasPid)


class _Signal:
    """A one-slot signal from one thread to another: a bare lock, held while nothing is posted.

    ``threading.Semaphore`` is Python around a ``Condition``: its waiter, once woken, must take
    the condition's lock again (against the poster, who may still hold it) and run its Python;
    twice per command on the start's critical path. A bare lock's ``acquire`` returns straight
    from the kernel's wake-up (a lock may be released by another thread than its holder's).
    """

    __slots__ = ("_lock",)

    def __init__(self) -> None:
        self._lock = _thread.allocate_lock()
        self._lock.acquire()

    def release(self) -> None:
        """Wake the waiter; `RuntimeError` when a post is pending already (nobody took it)."""
        self._lock.release()

    def acquire(self) -> None:
        """Block until posted, and take the post."""
        self._lock.acquire()


class _Wake:
    """The loop thread's wake-up of the spawner thread: an ``eventfd``, written with the GIL let go.

    A bare lock's ``release`` wakes the spawner while the waker still holds the GIL: on a busy CPU
    the woken thread preempts the waker, finds the GIL taken and sleeps again, and the waker,
    blocking next in `_Signal.acquire`, hands the GIL over with a third wake-up (red team round 26,
    perf: ``_Signal.release`` held 5.75% of the GIL samples). ``os.eventfd_write`` lets the GIL go
    around its system call, so the woken spawner takes it at once and runs the start; the waker
    then waits for the GIL instead, which the spawner hands back when it blocks for the next job.
    One job at a time (under `SessionCgroup._lock`): the counter is 0 or 1.
    """

    __slots__ = ("_fd",)

    def __init__(self) -> None:
        self._fd = os.eventfd(0, os.EFD_CLOEXEC)

    def release(self) -> None:
        """Wake the waiter (a closed one: `OSError`)."""
        os.eventfd_write(self._fd, 1)

    def acquire(self) -> None:
        """Block (without the GIL) until posted, and take the post."""
        os.eventfd_read(self._fd)

    def close(self) -> None:
        """Free the descriptor (once the waiter has ended: nothing reads it any more); only once,
        so a number the process reused meanwhile is never closed."""
        fd, self._fd = self._fd, -1
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)


class SessionCgroup:
    """One session's cgroup (a child of the owner's ``pids`` cgroup) and its spawner thread."""

    def __init__(self, path: Path) -> None:
        self.path = path
        #: Read again in place (``pread`` at 0 regenerates it): one system call per check.
        self._count = os.open(path / "pids.current", os.O_RDONLY | os.O_CLOEXEC)
        self._lock = threading.Lock()
        #: The session's commands still running (their roots' pids) and the cgroup each started in:
        #: no sweep of a cgroup while a command started in it runs.
        self._roots: dict[int, Path] = {}
        #: The command cgroups made and not removed yet (the spawner thread's current one included).
        #: These and `_here` change under `_lock` only (the spawner thread's moves are part of a
        #: start, whose caller holds it, or of the join, before anything else runs).
        self._children: set[Path] = set()
        #: The spawner thread's cgroup (None: a move failed half-way), its ``pids.current``, and
        #: the number of the last one made.
        self._here: Path | None = None
        self._here_count = -1
        self._made = 0
        self.closed = False
        # The hand-over to the spawner thread: one job at a time (under `_lock`).
        try:
            self._go = _Wake()
        except OSError:
            os.close(self._count)
            raise
        self._done = _Signal()
        self._job: Callable[[], Any] | None = None
        self._outcome: tuple[bool, Any] = (False, None)
        #: The spawner thread's id: every process it forks is its child (see `_reap_strays`).
        self._tid: int | None = None
        self._thread = threading.Thread(target=self._serve, name="shellrt-local-spawner", daemon=True)
        self._thread.start()
        self._done.acquire()  # the thread joined the cgroup, or could not
        joined, error = self._outcome
        if not joined:
            self.close()
            raise OSError(f"the spawner thread cannot join {path}: {error}")

    def _serve(self) -> None:
        """The spawner thread: join a command cgroup, then run each handed-over start until closed,
        moving to a fresh cgroup after each."""
        try:
            self._move_on()
        except OSError as exc:
            self._outcome = (False, exc)
            self._done.release()
            return
        self._tid = threading.get_native_id()
        _reset_on_fork()  # what a command does to this thread's priority reaches no later command
        self._outcome = (True, None)
        self._done.release()
        while True:
            self._go.acquire()
            job = self._job
            if job is None:  # closed
                return
            try:
                if not self._here_is_free():  # no command starts beside another's, nor its leftovers
                    self._move_on()
                self._outcome = (True, (job(), self._here))
            except BaseException as exc:  # handed back to the caller, raised there
                self._outcome = (False, exc)
            self._done.release()

    def _here_is_free(self) -> bool:
        """The spawner thread's cgroup holds no running command and nothing but the thread itself
        (on the spawner thread, in a start: `_roots` holds still under the caller's `_lock`)."""
        here = self._here
        if here is None or here in self._roots.values():
            return False
        try:
            return int(os.pread(self._here_count, 32, 0)) <= 1
        except (OSError, ValueError):
            return False

    def _move_on(self) -> None:
        """Move the spawner thread into a fresh command cgroup (`OSError`: `_here` is None then), and
        remove the ones ended commands left empty. On the spawner thread only."""
        if self.closed:
            raise OSError(f"the session cgroup {self.path} is closed")
        self._here = None
        for _ in range(3):  # a name taken (by a root command of the session): the next one
            self._made += 1
            fresh = self.path / f"c{self._made}"
            try:
                fresh.mkdir()
                break
            except FileExistsError:
                continue
        else:
            raise OSError(f"cannot make a command cgroup below {self.path}: the names are taken")
        try:
            count = os.open(fresh / "pids.current", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            with contextlib.suppress(OSError):
                fresh.rmdir()
            raise
        try:
            with open(fresh / "tasks", "w") as tasks:
                tasks.write(str(threading.get_native_id()))
        except OSError:
            os.close(count)
            with contextlib.suppress(OSError):
                fresh.rmdir()
            raise
        self._children.add(fresh)
        count, self._here_count = self._here_count, count
        self._here = fresh
        if count >= 0:
            os.close(count)
        self._remove_idle(kill=False)

    @property
    def usable(self) -> bool:
        """Open, with its spawner thread alive (a forked copy of the owner has no such thread)."""
        return not self.closed and self._thread.is_alive()

    def start(self, starter: Callable[[], _Started]) -> _Started:
        """Run ``starter`` (a vfork+exec) on the spawner thread, blocking until it is done: what it
        starts is a member for good, and counts as a running command of the session until `ended`.
        Raises what ``starter`` raised; `OSError` when the cgroup is closed."""
        with self._lock:
            if not self.usable:
                raise OSError(f"the session cgroup {self.path} is closed")
            self._job = starter
            self._go.release()
            try:
                self._done.acquire()
            except BaseException:  # a signal's exception: the start (a vfork+exec) still ends first
                self._done.acquire()
                self._job, self._outcome = None, (False, None)
                raise  # what it started is no command of the session: the next idle sweep ends it
            self._job = None
            ok, value = self._outcome
            self._outcome = (False, None)
            if not ok:
                raise value
            child: _Started = value[0]
            self._roots[child.pid] = value[1]
        return child

    def ended(self, pid: int) -> bool:
        """Command ``pid`` ended (and was reaped); returns whether it left something behind (in its
        own cgroup, or anywhere when no command runs)."""
        with self._lock:
            where = self._roots.pop(pid, None)
            if self.empty():
                return False
            self._reap_strays()
            if not self._roots or where is None:
                return not self.empty()
            return bool(self._listed(where))  # its subtree: it may have divided it (`_empty`)

    def _reap_strays(self) -> None:
        """Reap the spawner thread's children that are no command's root (under `_lock`: no start
        runs meanwhile, and each root it made is in `_roots` until its owner reaped it).

        A root that calls ``clone(CLONE_PARENT)`` gives the new process its own parent: this
        thread. Nothing else waits for it, so ended, it stayed the owner's zombie for the owner's
        life, holding a pid of the host and one of this cgroup (red team round 25; round 15 closed
        the same for a subreaper owner). ``WNOHANG``: one still running is left to the sweeps.
        """
        if self._tid is None:
            return
        try:
            fd = os.open(f"/proc/self/task/{self._tid}/children", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:  # the thread ended: its children went to another thread of the owner
            return
        try:
            children = [int(p) for p in os.read(fd, 1 << 20).split()]
        except (OSError, ValueError):
            return
        finally:
            os.close(fd)
        for pid in children:
            if pid not in self._roots:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, os.WNOHANG)

    def empty(self, roots: int = 0) -> bool:
        """Nothing but the spawner thread (and ``roots`` tasks the caller knows of) is in the cgroup
        (``pids.current`` counts tasks until they are reaped; the root was)."""
        try:
            return int(os.pread(self._count, 32, 0)) <= 1 + roots
        except (OSError, ValueError):
            return False  # unsure: the caller sweeps

    def kill_if_idle(self) -> None:
        """Kill every member of each cgroup no running command was started in: all of them when no
        command of the session runs (the reaper's idle sweep), else those of ended commands.

        Under the lock `start` takes: no command starts meanwhile, so none is killed by mistake.
        """
        with self._lock:
            if not self._roots:
                for path in self._dirs():
                    self._empty(path, below=False)
            self._remove_idle(kill=True)
            self._reap_strays()

    def _empty(self, path: Path, *, below: bool) -> None:
        """Kill every member of the cgroup ``path`` (under `_lock`), and with ``below`` of the
        cgroups nested in it, its ``pids.max`` at 0 meanwhile: a leftover that forks and exits faster
        than a listing is killed (a fork chain) has its next fork refused, so its last link dies.
        The spawner thread's cgroup gets its limit back (no start runs meanwhile: `_lock`); the
        session's own is never limited (the limit holds for the cgroups below it: the running
        commands').

        ``below``: an ended command's cgroup is its subtree. A command may divide it (``cgcreate``,
        ``cgexec``: a harness limiting a job) without ever leaving it; emptied by its one
        directory, a process in a nested cgroup ran on while the session stayed busy (red team
        round 46, review24). The limit, hierarchical, refuses their forks too."""
        members: Callable[[], list[int]] = functools.partial(self._listed if below else self._members_of, path)
        if not members():
            return
        limit = path / "pids.max"
        if path != self.path:
            with contextlib.suppress(OSError):
                limit.write_text("0")
        try:
            self._kill_until_empty(members, _KILL_DEADLINE_S)
        finally:
            if path == self._here:
                with contextlib.suppress(OSError):
                    limit.write_text("max")

    def _remove_idle(self, *, kill: bool) -> None:
        """Empty (``kill``) the command cgroups no running command was started in and remove them,
        but the spawner thread's (under `_lock`: no start runs, so no started root is unrecorded).

        Without ``kill`` (a move), only the empty ones go (``rmdir`` refuses the others)."""
        for path in sorted(self._children.difference(self._roots.values())):
            if kill:
                self._empty(path, below=True)
            for nested in self._dirs(path)[:0:-1]:  # a command's own below its one, the deepest first
                with contextlib.suppress(OSError):
                    nested.rmdir()
            if path == self._here:
                continue  # the spawner thread is in it: the next command starts there
            try:
                path.rmdir()
            except FileNotFoundError:
                pass
            except OSError:
                continue  # members left (or leaving): the next sweep, at the latest close
            self._children.discard(path)
        if kill:  # nothing is started in the session's own cgroup: any member there is a leftover
            self._empty(self.path, below=False)

    def members(self) -> list[int]:
        """The member processes of the session's cgroup and its command cgroups (the owner excluded)."""
        return self._listed()

    def _listed(self, top: Path | None = None) -> list[int]:
        """The processes in the cgroup ``top`` (the session's) and those nested in it, but the owner
        (empty when they cannot be read)."""
        found: list[int] = []
        for path in self._dirs(top):
            found += self._members_of(path)
        return found

    def _dirs(self, top: Path | None = None) -> list[Path]:
        """The cgroup ``top`` (the session's) and every cgroup nested in it (a command may make
        more, as root), each after its parent."""
        found, todo = [], [self.path if top is None else top]
        while todo:
            path = todo.pop()
            found.append(path)
            with contextlib.suppress(OSError), os.scandir(path) as entries:
                todo += [Path(e.path) for e in entries if e.is_dir(follow_symlinks=False)]
        return found

    def _members_of(self, path: Path) -> list[int]:
        """The processes in the one cgroup ``path``, but the owner (empty when it cannot be read)."""
        try:
            fd = os.open(path / "cgroup.procs", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return []
        try:
            listed = os.read(fd, 1 << 20)
        except OSError:
            return []
        finally:
            os.close(fd)
        me = os.getpid()
        return [pid for pid in map(int, listed.split()) if pid != me]

    def kill_members(self, *, deadline_s: float = _KILL_DEADLINE_S) -> bool:
        """SIGKILL every member until none is left (they are not our children: init reaps them);
        returns whether none is."""
        return self._kill_until_empty(self._listed, deadline_s)

    @staticmethod
    def _kill_until_empty(listed: Callable[[], list[int]], deadline_s: float) -> bool:
        end = time.monotonic() + deadline_s
        while True:
            pids = listed()
            if not pids:
                return True
            if time.monotonic() > end:
                return False
            # Through pidfds, members again after they are open: one that died meanwhile was
            # reaped by init, and its pid may be any host process's by now (round 15).
            kill_listed(pids, listed)
            time.sleep(0.005)

    def close(self) -> None:
        """Kill every member, end the spawner thread and remove the cgroup (blocking: call it off
        the event loop)."""
        with self._lock:
            if not self.closed:
                # While the spawner thread lives: what a command made its child is found (and
                # reaped, killed) through it; once it ended, they are the owner's other threads'.
                self.kill_members()
                self._reap_strays()
                self.closed = True
                self._job = None
                # The thread sees no job and ends (it leaves the cgroup with it); a thread that
                # ended already left this post pending, which it never takes.
                with contextlib.suppress(OSError):
                    self._go.release()
        self._thread.join(_JOIN_TIMEOUT_S)
        if not self._thread.is_alive():
            self._go.close()  # a thread still stuck in its join keeps its descriptor: never reused under it
            for path in self._dirs():  # nothing starts any more: no fork of what is left succeeds
                with contextlib.suppress(OSError):
                    (path / "pids.max").write_text("0")
        self.kill_members()
        with contextlib.suppress(OSError):
            os.close(self._count)
        count, self._here_count = self._here_count, -1  # no start runs any more: nothing reads it
        if count >= 0:
            with contextlib.suppress(OSError):
                os.close(count)
        for _ in range(100):  # the last killed members may take a moment to leave
            try:
                for path in sorted(self._dirs(), key=lambda p: -len(p.parts)):  # the deepest first
                    with contextlib.suppress(FileNotFoundError):
                        path.rmdir()
                return
            except OSError:
                time.sleep(0.01)


def _owner_is_subreaper() -> bool:
    """This process adopts orphans (PID 1 of its pid namespace, or ``PR_SET_CHILD_SUBREAPER``).

    Commands started from the cgroup are its children, and what they leave would come back to
    it: killed or ended, each stayed a zombie of a process that never reaps what it did not start
    (red team, round 15). Such an owner gets the reaper process, which reaps what it adopts.
    """
    if os.getpid() == 1:
        return True
    import ctypes

    flag = ctypes.c_int(0)
    if (
        ctypes.CDLL(None, use_errno=True).prctl(37, ctypes.byref(flag), 0, 0, 0) != 0
    ):  # PR_GET_CHILD_SUBREAPER
        return True  # cannot tell: the reaper is the safe side
    return flag.value != 0


def open_session_cgroup(owner_cgroup: Path | None) -> SessionCgroup | None:
    """A fresh session cgroup below the owner's with its spawner thread in it, or None where
    none can be made (the caller uses the reaper process then): not root, no owner cgroup,
    an owner that is a subreaper (`_owner_is_subreaper`), or a kernel that refuses."""
    if owner_cgroup is None or os.geteuid() != 0 or _owner_is_subreaper():
        return None
    path = owner_cgroup / f"session-{secrets.token_hex(6)}"
    try:
        path.mkdir()
    except OSError:
        return None
    try:
        return SessionCgroup(path)
    except OSError:
        with contextlib.suppress(OSError):
            path.rmdir()
        return None
