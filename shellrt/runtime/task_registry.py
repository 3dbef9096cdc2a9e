"""The session's background tasks on disk, so a reopened session knows what its last owner ran.

``<session_dir>/tasks.json`` (mode 0600, rewritten atomically whenever a task is
added, read, stopped or ends) holds each task's id, command, status, spool
paths, start time, how much output was already read, and the identity of its
process and of the owning shellrt process: pid + start time (from
``/proc/<pid>/stat``) + boot id. A pid alone is not an identity — the kernel
recycles pids — so nothing here signals a process whose start time and boot
differ from the recorded ones.

On reopening: a task recorded as running whose owner is gone is reported
``killed`` with the note that it died with its owner (the owner's watchdog, or
bwrap's ``--die-with-parent``, normally took it down); one that verifiably
outlived its owner is killed now and reported so -- only when its environment
carries the marker the local backend gave that owner's commands (`started_by_owner`:
the file is a command's to write on local; bwrap and docker processes carry none
of that form and are never signalled from here). A task whose recorded owner
still runs (another process has this session open) stays its owner's: it is
reported running, its output is readable here, and it is never signalled.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import secrets
import signal
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sandbox._hostread import read_regular
from sandbox._proctree import read_proc, stat_fields
from shellrt.runtime.leftovers import root_still_there
from shellrt.runtime.session_dir import IN_USE_FILE
from shellrt.supervisor import BackgroundTask, TaskStatus
from shellrt.supervisor.tasks import DEFAULT_MAX_BACKGROUND_TASKS, TaskManager, max_background_tasks

__all__ = ["TASKS_FILE", "ProcessIdentity", "TaskRegistry"]

log = logging.getLogger("shellrt")

#: The background-task registry in the session directory.
TASKS_FILE = "tasks.json"
#: The largest registry read back (records are cut and few: see `MAX_RECORDS`, `_CUT`).
MAX_REGISTRY_BYTES = 16 << 20
#: Tasks the registry keeps: every running one, then the newest ended ones up to this many in all.
#: Unbounded, every task the session ever started was rewritten at each change (red team, round 15).
MAX_RECORDS = 500
#: Characters of a record's free texts kept (the model chose them: a command may be 100,000
#: characters, and a control character is six bytes of JSON). Worst record ~14 KB, 500 ~7 MB.
_CUT = {"command": 1_000, "description": 300, "note": 1_000}
#: Room for the cut's own words, so that a record read back and saved again is not cut twice.
_CUT_SLACK = 100
_VERSION = 1
#: How long an adopted task's process may be gone before its live owner records how it ended
#: (the owner writes the registry as its task ends); then it is reported ended, status unknown.
_NO_RECORD_GRACE_S = 5.0
#: An adopted task is looked at again at most this often.
_ASK_EVERY_S = 0.2


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as fh:
            return fh.read().strip()
    except OSError:
        return ""


@dataclass(frozen=True)
class ProcessIdentity:
    """A process, unmistakably: pid, start time in clock ticks since boot, and which boot."""

    pid: int
    start_ticks: int
    boot_id: str

    @classmethod
    def of(cls, pid: int | None) -> ProcessIdentity | None:
        """The identity of the live process ``pid`` now (None when it is gone or unreadable)."""
        if pid is None or pid <= 0:
            return None
        fields = stat_fields(pid)
        if fields is None or len(fields) < 20 or fields[0] in (b"Z", b"X", b"x"):
            return None
        try:
            return cls(pid, int(fields[19]), _boot_id())
        except ValueError:
            return None

    @classmethod
    def from_json(cls, value: Any) -> ProcessIdentity | None:
        if not isinstance(value, dict):
            return None
        try:
            return cls(int(value["pid"]), int(value["start_ticks"]), str(value["boot_id"]))
        except (KeyError, TypeError, ValueError):
            return None

    def to_json(self) -> dict[str, Any]:
        return {"pid": self.pid, "start_ticks": self.start_ticks, "boot_id": self.boot_id}

    def alive(self) -> bool:
        """This very process still runs (same pid, same start, same boot; a zombie is dead)."""
        return bool(self.boot_id) and ProcessIdentity.of(self.pid) == self

    def kill(self, started_by: ProcessIdentity | None = None) -> bool:
        """SIGKILL this process (and its group when it leads one); False when it is not this process,
        or (``started_by`` given) when its environment does not carry the marker shellrt gave the
        commands of that owner (`started_by_owner`).

        Race-free against pid reuse: the pid is pinned by a pidfd first, then the
        identity is checked again, then the signal goes through the pidfd. Its
        process group is killed only while its verified leader is alive (a group
        id is not reused while its leader lives).
        """
        try:
            pidfd = os.pidfd_open(self.pid)
        except OSError:
            return False
        try:
            if not self.alive():
                return False
            if started_by is not None and not started_by_owner(self.pid, started_by):
                return False
            fields = stat_fields(self.pid)
            if fields is not None and len(fields) > 2 and fields[2] == str(self.pid).encode():
                with contextlib.suppress(OSError):
                    os.killpg(self.pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            return True
        finally:
            os.close(pidfd)


#: The start of every marker shellrt gives a command (`sandbox._hostproc.HostRunner.marker_prefix`:
#: ``<backend>-<owner pid>x<random>-<n>``), in a process's environment as it was started.
_MARKER = re.compile(rb"(?:^|\0)SHELLRT_RUN_ID=[a-z]+-(\d+)x")


def started_by_owner(pid: int, owner: ProcessIdentity) -> bool:
    """Whether process ``pid`` was started by shellrt for ``owner``: its environment as started
    (``/proc/<pid>/environ``, which the process's own ``unset`` does not change) carries a marker
    naming the owner's pid, and no process has that pid now. The registry is a file a command on
    the local backend can write: a record naming any process of the caller's (its identity read
    from ``/proc``) with a dead owner had that process and its group SIGKILLed at the next
    reopening (red team round 50). Unreadable (another uid, not dumpable): False."""
    if ProcessIdentity.of(owner.pid) is not None:
        # That pid runs (another owner's, or anyone's): a record naming a live session's owner with
        # a wrong start time had that session's commands killed. A dead owner's pid reused: not killed.
        return False
    try:
        environ = read_proc(f"/proc/{pid}/environ")
    except OSError:
        return False
    return any(int(found) == owner.pid for found in _MARKER.findall(environ))


class TaskRegistry:
    """Persists a `TaskManager`'s tasks in ``<session_dir>/tasks.json``; adopts them on reopening."""

    def __init__(self, session_dir: Path, tasks: TaskManager) -> None:
        self.path = Path(session_dir) / TASKS_FILE
        self.tasks = tasks
        self.owner = ProcessIdentity.of(os.getpid())
        #: The inode of the session's in-use lock, taken now (a command may rename another file over
        #: ``.in-use`` later); `_own_lock` turns it into ``_lock_key``.
        self._lock_ino = _inode(Path(session_dir) / IN_USE_FILE)
        #: That lock as this process holds it: ``<major>:<minor>:<inode>`` as the kernel prints it in
        #: a descriptor's lock lines (found by `_own_lock`); None when this process holds none.
        self._lock_key: bytes | None = None
        #: Whether this process holds that lock (`_own_lock`): looked for once, when first needed.
        self._own_checked = False
        #: owner pid -> the descriptor its record says it holds that lock on (looked at first: a
        #: hint only, each record's ``owner.lock_fd``; this process's own is found by `_own_lock`).
        self._lock_fds: dict[int, int] = {}
        #: owner pid -> when it was last asked whether it holds that lock, and the answer (`_owner_live`).
        self._holders: dict[int, tuple[float, bool]] = {}
        #: Descriptors of other processes still to be looked at in this judgement (`_owner_live`).
        self._fd_budget = _FD_BUDGET
        #: task id -> the identity of its process, taken once while it ran.
        self._identities: dict[str, ProcessIdentity | None] = {}
        #: task id -> the owner that started it (this process, or an earlier one for adopted tasks).
        self._owners: dict[str, ProcessIdentity | None] = {}
        #: adopted task id -> when its process was first seen gone while the registry still said running.
        self._gone_since: dict[str, float] = {}
        #: adopted task id -> when `refresh` last looked (four /proc reads: ~0.1 ms here).
        self._asked: dict[str, float] = {}
        #: adopted task id -> the registry file (inode, size, mtime) its record was last read from.
        self._seen: dict[str, tuple[int, ...]] = {}
        tasks.refresh_adopted = self.refresh

    # --- writing -------------------------------------------------------------------------
    def save(self) -> None:
        """Rewrite the registry (atomically, mode 0600); a failure is logged, never raised."""
        tasks = self.tasks.list()
        if len(tasks) > MAX_RECORDS:
            running = sum(1 for t in tasks if t.status is TaskStatus.RUNNING)
            ended_kept = max(0, MAX_RECORDS - running)
            ended = [t for t in tasks if t.status is not TaskStatus.RUNNING]
            dropped = {t.id for t in ended[: len(ended) - ended_kept]}
            tasks = [t for t in tasks if t.id not in dropped]
        records = [self._record(task) for task in tasks]
        data = {"version": _VERSION, "tasks": records}
        tmp = self.path.with_name(f".{TASKS_FILE}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as fh:
                json.dump(data, fh)
            os.replace(tmp, self.path)
        except OSError as exc:
            log.warning("could not save the background-task registry %s: %s", self.path, exc)
            with contextlib.suppress(OSError):
                tmp.unlink()

    def _record(self, task: BackgroundTask) -> dict[str, Any]:
        if task.id not in self._identities:
            # Taken while it runs: a task that already ended has no identity worth keeping.
            running = task.status is TaskStatus.RUNNING
            identity = ProcessIdentity.of(task.pid) if running else None
            execution = self.tasks.execution(task.id)
            if identity is not None and execution is not None and not root_still_there(execution.process):
                identity = None  # its root was reaped before this read: the pid may be anyone's (round 15)
            self._identities[task.id] = identity
            self._owners.setdefault(task.id, self.owner)
        identity, owner = self._identities[task.id], self._owners.get(task.id)
        return {
            "task": _cut_texts(task.model_dump(mode="json")),
            "read_offset": self.tasks.read_offset(task.id),
            "process": identity.to_json()
            if identity is not None and task.status is TaskStatus.RUNNING
            else None,
            "owner": self._owner_json(owner),
        }

    def _own_lock(self) -> bool:
        """Whether this process holds the session's in-use lock (as its `Runtime` does), found once
        among its own descriptors (not at construction: a server's thousands of descriptors would
        be read at every session's start, for registries that never judge an owner)."""
        if not self._own_checked:
            self._own_checked = True
            found = _own_flocks(self._lock_ino) if self._lock_ino is not None else {}
            if len(set(found.values())) == 1:  # else none, or files of that inode on two devices
                fd, self._lock_key = next(iter(found.items()))
                self._lock_fds[os.getpid()] = fd
        return self._lock_key is not None

    def _owner_json(self, owner: ProcessIdentity | None) -> dict[str, Any] | None:
        if owner is None:
            return None
        found = owner.to_json()
        self._own_lock()
        if owner.pid in self._lock_fds:
            found["lock_fd"] = self._lock_fds[owner.pid]
        return found

    # --- reopening ---------------------------------------------------------------------------
    def reopen(self) -> list[str]:
        """Adopt the tasks of an earlier owner of this session; returns notes for the diagnostics.

        Call before this session starts any task of its own.
        """
        if not os.path.lexists(self.path):
            return []
        # Never a FIFO's blocking open, a link out, or a sparse giant (red team round 13).
        data = read_regular(self.path, MAX_REGISTRY_BYTES, follow=False)
        try:
            if data is None or len(data) > MAX_REGISTRY_BYTES:
                raise ValueError(f"not a regular file of at most {MAX_REGISTRY_BYTES:,} bytes")
            raw = json.loads(data)
        except (ValueError, RecursionError) as exc:
            return [
                f"background-task registry {self.path} is unreadable ({exc}); earlier tasks are not listed"
            ]
        notes: list[str] = []
        self._fd_budget = _FD_BUDGET
        records = raw.get("tasks") if isinstance(raw, dict) else None
        records = records if isinstance(records, list) else []
        limit = MAX_RECORDS + _running_cap()
        if len(records) > limit:
            notes.append(
                f"background-task registry {self.path} holds {len(records):,} records, more than the {limit:,} "
                f"shellrt writes (a command may have written it): the {len(records) - limit:,} more were not read"
            )
            records = records[:limit]
        for record in records:
            try:
                task = BackgroundTask.model_validate(record["task"])
                offset = int(record.get("read_offset", 0))
            except (KeyError, TypeError, ValueError) as exc:
                notes.append(f"background-task registry {self.path}: a record is unreadable ({exc}); skipped")
                continue
            owner = ProcessIdentity.from_json(record.get("owner"))
            said = record.get("owner")
            hint = said.get("lock_fd") if isinstance(said, dict) else None
            if owner is not None and type(hint) is int and 0 <= hint < 1 << 20:
                self._lock_fds.setdefault(owner.pid, hint)
            process = ProcessIdentity.from_json(record.get("process"))
            if task.status is TaskStatus.RUNNING:
                task = self._judge(task, owner, process)
                if task.status is not TaskStatus.RUNNING:
                    notes.append(f"background task {task.id} ({task.command[:60]!r}): {task.note}")
            self.tasks.adopt(task, read_offset=max(0, offset))
            self._identities[task.id] = process if task.status is TaskStatus.RUNNING else None
            self._owners[task.id] = owner
        self.save()
        return notes

    def refresh(self, task: BackgroundTask) -> BackgroundTask | None:
        """A newer state of an adopted task recorded as running by a live owner elsewhere, or None
        while it still runs there.

        Round 18: such a task was judged once, at reopening, and read as running for good -- after
        it ended, and after its owner died -- so it held a slot of this session's task cap forever
        and TaskOutput waited on it. Asked again whenever it is queried: its owner gone, it is
        judged as at reopening (killed if it outlived the owner); its process gone, the owner's
        record of its end is taken, or after `_NO_RECORD_GRACE_S` without one it is reported
        ended with its status unknown here. Nothing is signalled while the owner lives.
        """
        now = time.monotonic()
        if now - self._asked.get(task.id, -_ASK_EVERY_S) < _ASK_EVERY_S:
            return None  # asked a moment ago (the supervisor asks twice per command)
        self._asked[task.id] = now
        self._fd_budget = _FD_BUDGET
        owner, process = self._owners.get(task.id), self._identities.get(task.id)
        if owner is None or not self._owner_live(owner):
            self._identities[task.id] = None
            return self._judge(task, owner, process)
        if process is not None and process.alive():
            return None
        recorded = self._recorded(task.id)
        if recorded is not None and recorded.status is not TaskStatus.RUNNING:
            self._identities[task.id] = None
            return recorded
        if process is None:  # no identity noted: the owner's record is all there is
            return None
        first = self._gone_since.setdefault(task.id, time.monotonic())
        if time.monotonic() - first < _NO_RECORD_GRACE_S:
            return None
        self._identities[task.id] = None
        note = (
            f"ended in shellrt process {owner.pid}, which ran it; that process recorded no exit status "
            "here, so how it ended is unknown"
        )
        return task.model_copy(
            update={"status": TaskStatus.KILLED, "note": note, "ended_at": datetime.now(UTC)}
        )

    def _recorded(self, task_id: str) -> BackgroundTask | None:
        """The task as ``tasks.json`` records it now (another process may have rewritten it); the
        file is read again only when it changed (a query may come twice per command). The change
        time is in the key: an atomic rewrite may reuse the freed inode number at the same size
        within one mtime tick."""
        try:
            st = os.stat(self.path, follow_symlinks=False)
            key: tuple[int, ...] = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        except OSError:
            return None
        if self._seen.get(task_id) == key:
            return None
        self._seen[task_id] = key
        data = read_regular(self.path, MAX_REGISTRY_BYTES, follow=False)
        try:
            raw = json.loads(data) if data is not None and len(data) <= MAX_REGISTRY_BYTES else None
            records = raw.get("tasks") if isinstance(raw, dict) else None
            for record in records if isinstance(records, list) else []:
                found = record.get("task") if isinstance(record, dict) else None
                if isinstance(found, dict) and found.get("id") == task_id:
                    return BackgroundTask.model_validate(found)
        except (ValueError, RecursionError):
            return None
        return None

    def _owner_live(self, owner: ProcessIdentity | None) -> bool:
        """Whether ``owner`` runs and has this session open: it holds the session's in-use lock, as
        every `Runtime` does from its start to its close. The identity alone is public in ``/proc``: a
        forged record naming init as the owner of tasks "running" held the session's background-task
        cap at every reopening for good (red team round 51). Where this process holds no such lock
        (a registry used without a `Runtime`), the identity alone decides, as before."""
        if owner is None or not owner.alive():
            return False
        if not self._own_lock():
            return True
        now = time.monotonic()
        asked = self._holders.get(owner.pid)
        if asked is None or now - asked[0] >= _ASK_EVERY_S:
            # Asked at most every `_ASK_EVERY_S` per owner (a reopening judges every record at once).
            # From the owner's own descriptors, never ``/proc/locks``: that table holds every lock on
            # the host, any process adds to it without bound, and the kernel's time to list it grows
            # with the square of its length (200,000 locks a process made: 45 s; round 52).
            if len(self._holders) > MAX_RECORDS:
                self._holders.clear()
            assert self._lock_key is not None
            looked, held = holds_flock(
                owner.pid,
                self._lock_key,
                min(_FD_LIMIT, self._fd_budget),
                first=self._lock_fds.get(owner.pid),
            )
            self._fd_budget = max(0, self._fd_budget - looked)
            asked = (now, held)
            self._holders[owner.pid] = asked
        return asked[1]

    def _judge(
        self, task: BackgroundTask, owner: ProcessIdentity | None, process: ProcessIdentity | None
    ) -> BackgroundTask:
        """What became of a task recorded as running, now that its session is reopened."""
        if self._owner_live(owner):
            assert owner is not None
            whose = "this process" if owner.pid == os.getpid() else f"shellrt process {owner.pid}"
            note = (
                f"run by {whose}, which still has this session open: its output is readable here; "
                "stop it there"
            )
            return task.model_copy(update={"note": note})
        if owner is not None and owner.alive():  # it runs, but without this session: no owner of it
            note = (
                f"the process the registry names as its owner (pid {owner.pid}) runs but does not have this "
                "session open, so it is not the shellrt process that ran the task (a command may have written "
                "the registry) and nothing was signalled; stop the task yourself if it runs and is yours"
            )
            return task.model_copy(update={"status": TaskStatus.KILLED, "note": note, "ended_at": None})
        who = f"shellrt process {owner.pid}" if owner is not None else "the shellrt process that started it"
        if owner is not None and process is not None and process.kill(started_by=owner):
            note = f"outlived its owner ({who} ended while it ran); killed when the session was reopened"
            ended: datetime | None = datetime.now(UTC)
        elif process is not None and process.alive():
            note = (
                f"its owner ({who}) ended; the process the registry names for it (pid {process.pid}) runs "
                "but cannot be shown to be that owner's (no marker of that owner in its environment, or "
                "the owner's pid is in use again), so it was not signalled: stop it yourself if it is yours"
            )
            ended = None
        else:
            note = (
                f"died with its owner: {who} ended (it crashed or was killed) while the task ran; "
                "its output up to then is kept"
            )
            ended = None
        return task.model_copy(update={"status": TaskStatus.KILLED, "note": note, "ended_at": ended})


def _running_cap() -> int:
    """The session's background-task cap: `TaskRegistry.save` keeps every running task beyond
    `MAX_RECORDS`. A reopening read every record of a 16 MiB file: 45,000 forged "running" ones took
    it 60 s on the event loop (red team round 51)."""
    try:
        return max_background_tasks()
    except ValueError:
        return DEFAULT_MAX_BACKGROUND_TASKS


#: Descriptors of one owner looked at for the session's lock after the one its record names (a
#: `Runtime` takes the lock at its start: among its first few dozen; /proc lists them in numeric
#: order). Past it, "cannot tell": not counted as this session's owner, and nothing is signalled.
_FD_LIMIT = 128
#: Descriptors looked at over one reopening (or one query of an adopted task), whatever the records
#: name: ~80 ms at most (128 descriptors of a process without the lock: ~10 ms at load 13 here).
_FD_BUDGET = 1024


def _inode(path: Path) -> int | None:
    try:
        return os.stat(path, follow_symlinks=False).st_ino
    except OSError:
        return None


def _own_flocks(ino: int) -> dict[int, bytes]:
    """This process's descriptors holding a ``flock`` on a file of inode ``ino``, each with the file
    as the kernel prints it (``<major>:<minor>:<inode>``: taken from the kernel's own line, not made
    from ``stat``, whose device differs from the kernel's on btrfs subvolumes)."""
    found: dict[int, bytes] = {}
    suffix = b":%d" % ino
    with contextlib.suppress(OSError), os.scandir("/proc/self/fd") as listing:
        for entry in listing:
            for token in _flock_tokens(os.getpid(), entry.name):
                if token.endswith(suffix):
                    found[int(entry.name)] = token
    return found


def holds_flock(pid: int, token: bytes, limit: int | None, *, first: int | None = None) -> tuple[int, bool]:
    """(descriptors looked at, whether one of process ``pid``'s descriptors holds a ``flock`` on the
    file ``token`` names): `_flock_fd`, descriptor ``first`` (its record's hint) looked at first."""
    if first is not None and _fd_holds(pid, str(first), token):
        return 1, True
    looked, fd = _flock_fd(pid, token, limit)
    return looked + (first is not None), fd is not None


def _fd_holds(pid: int, name: str, token: bytes) -> bool:
    """Whether descriptor ``name`` of process ``pid`` names a path and holds a ``flock`` on ``token``."""
    return token in _flock_tokens(pid, name)


def _flock_tokens(pid: int, name: str) -> list[bytes]:
    """The files (``<major>:<minor>:<inode>``) descriptor ``name`` of process ``pid`` holds a
    ``flock`` on, from its ``fdinfo`` lock lines; none when it names no path (a socket's, pipe's or
    epoll's ``fdinfo`` is not read) or cannot be read."""
    try:
        if not os.readlink(f"/proc/{pid}/fd/{name}").startswith("/"):
            return []
        info = read_proc(f"/proc/{pid}/fdinfo/{name}")
    except OSError:
        return []
    tokens = []
    for line in info.split(b"\n"):
        words = line.split()
        if len(words) > 6 and words[0] == b"lock:" and words[2] == b"FLOCK":
            tokens.append(words[6])
    return tokens


def _flock_fd(pid: int, token: bytes, limit: int | None) -> tuple[int, int | None]:
    """(descriptors looked at, the one of process ``pid``'s that holds a ``flock`` on the file
    ``token`` names, or None), from its own ``/proc/<pid>/fdinfo`` (the kernel lists there the locks
    that very descriptor holds): the first ``limit`` descriptors at most (None: all). Unreadable
    (another uid, gone): none.

    Never ``/proc/locks``: it lists every lock of every process on the host, sandboxed ones too,
    which any process can grow without bound (POSIX byte-range locks on files of its own), and the
    kernel's time to list it grows with the square of its length (round 52). Only descriptors that
    name a path are read (no socket's, pipe's or epoll's ``fdinfo``, which another process may make
    long); ``readlink`` and ``fdinfo`` ask no file system (a hung mount stalls neither)."""
    looked = 0
    try:
        with os.scandir(f"/proc/{pid}/fd") as listing:
            for entry in listing:
                if limit is not None and looked >= limit:
                    break
                looked += 1
                if _fd_holds(pid, entry.name, token):
                    return looked, int(entry.name)
    except OSError:
        pass
    return looked, None


def _cut_texts(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with its free texts (command, description, note) cut to `_CUT`, the cut said."""
    for key, keep in _CUT.items():
        text = record.get(key)
        if isinstance(text, str) and len(text) > keep + _CUT_SLACK:
            record[key] = f"{text[:keep]} … [{len(text) - keep:,} more characters not kept in the task registry]"
    return record
