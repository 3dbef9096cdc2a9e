"""Background tasks: ids, status, incremental output reads, stop.

A task is an `Execution` nobody waits on. Its output is already spooled to a
file by the pump; `TaskManager.read_new` hands out only what was not read
before (whole lines while the task runs, so a filter never sees half a line),
optionally keeping only lines that match a regex.
"""

from __future__ import annotations

import os
import re
import secrets
import signal as _signal
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import anyio

from shellrt.supervisor.errors import SupervisorError, TaskNotFoundError
from shellrt.supervisor.execution import Execution
from shellrt.supervisor.models import OOM_NOTE, BackgroundTask, TaskOutputChunk, TaskStatus
from shellrt.supervisor.spool import open_own
from shellrt.supervisor.text import safe_decode, settled, settled_lines, trim_partial_utf8

__all__ = [
    "DEFAULT_MAX_BACKGROUND_TASKS",
    "TASK_CAP_ENV",
    "TaskManager",
    "max_background_tasks",
    "new_task_id",
]

_ID_ALPHABET = string.ascii_lowercase + string.digits
#: Per read, at most this many bytes are consumed (the rest stays for the next read).
DEFAULT_READ_BYTES = 256 * 1024
#: How often a wait on a task another live process runs asks whether it ended.
_ADOPTED_POLL_S = 0.25
#: A running task's unfinished last line is held back, unless it grows beyond this.
_MAX_PENDING_LINE = 64 * 1024
#: Background tasks one session runs at once unless ``SHELLRT_MAX_BACKGROUND_TASKS`` says otherwise
#: (checked by the runtime before a task starts, and by `Supervisor.run` before a timed-out
#: command moves to the background).
DEFAULT_MAX_BACKGROUND_TASKS = 64
TASK_CAP_ENV = "SHELLRT_MAX_BACKGROUND_TASKS"


def max_background_tasks() -> int:
    """``$SHELLRT_MAX_BACKGROUND_TASKS`` or the default; raises ValueError for a bad value."""
    raw = os.environ.get(TASK_CAP_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_BACKGROUND_TASKS
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(
            f"{TASK_CAP_ENV}={raw!r}: give a whole number of at least 1 (default {DEFAULT_MAX_BACKGROUND_TASKS})"
        )
    return int(raw)


def new_task_id() -> str:
    """A short id like ``b3f9k2``: ``b`` + 5 base-36 characters (60M values; collisions are retried)."""
    return "b" + "".join(secrets.choice(_ID_ALPHABET) for _ in range(5))


@dataclass
class _Task:
    id: str
    command: str
    description: str
    #: None for a task adopted from an earlier owner of the session (`TaskManager.adopt`).
    execution: Execution | None
    started_at: datetime
    read_offset: int = 0
    stopped_by_us: bool = False
    stop_reason: str | None = None
    ended_at: datetime | None = field(default=None)
    #: An adopted task's state: decided once, by whoever adopted it.
    adopted: BackgroundTask | None = None


class TaskManager:
    """The background tasks of one supervisor session."""

    def __init__(self) -> None:
        self._tasks: dict[str, _Task] = {}
        #: Called after a task was added, stopped or read (a persisted registry rewrites itself).
        self.on_change: Callable[[], None] | None = None
        #: A newer state of an adopted task that a live owner elsewhere runs, or None while it still
        #: runs (set by the persisted registry). Without it such a task stayed "running" for good.
        self.refresh_adopted: Callable[[BackgroundTask], BackgroundTask | None] | None = None

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change()

    # --- registration (supervisor side) -------------------------------------
    def new_id(self) -> str:
        """A fresh task id, unused in this session."""
        task_id = new_task_id()
        while task_id in self._tasks:
            task_id = new_task_id()
        return task_id

    def add(
        self,
        command: str,
        description: str,
        execution: Execution,
        *,
        read_offset: int = 0,
        task_id: str | None = None,
    ) -> str:
        """Register a running execution (under ``task_id`` or a fresh id); returns the id."""
        task_id = task_id or self.new_id()
        self._tasks[task_id] = _Task(
            id=task_id,
            command=command,
            description=description,
            execution=execution,
            started_at=datetime.now(UTC),
            read_offset=read_offset,
        )
        self._changed()
        return task_id

    def adopt(self, task: BackgroundTask, *, read_offset: int = 0) -> None:
        """Register a task an earlier owner of this session started (reopened after a restart).

        It has no process here: its state is ``task`` as the adopter judged it (a
        dead owner's task is reported dead), its output is read from its spool
        file, and `stop` never signals anything for it.
        """
        self._tasks[task.id] = _Task(
            id=task.id,
            command=task.command,
            description=task.description,
            execution=None,
            started_at=task.started_at,
            read_offset=read_offset,
            adopted=task,
        )

    def read_offset(self, task_id: str) -> int:
        """How much of the task's output file earlier reads consumed."""
        return self._lookup(task_id).read_offset

    def execution(self, task_id: str) -> Execution | None:
        """The task's live execution (None for an adopted task)."""
        return self._lookup(task_id).execution

    # --- queries --------------------------------------------------------------
    def list(self) -> list[BackgroundTask]:
        """Every task of the session, oldest first."""
        return [self._snapshot(t) for t in self._tasks.values()]

    def any_running(self) -> bool:
        """Whether a task still runs (what ``any(t.status is RUNNING for t in list())`` says,
        without building a snapshot of every task: the supervisor asks twice per command)."""
        running = False
        for task in self._tasks.values():
            ex = task.execution
            if ex is None:
                running = running or self._adopted(task).status is TaskStatus.RUNNING
            elif not ex.done.is_set():
                running = True
            elif task.ended_at is None:
                task.ended_at = datetime.now(UTC)  # as a snapshot would record it
        return running

    def running_count(self) -> int:
        """How many tasks still run (an adopted task by its adopter's judgement)."""
        count = 0
        for task in self._tasks.values():
            if task.execution is None:
                count += self._adopted(task).status is TaskStatus.RUNNING
            else:
                count += not task.execution.done.is_set()
        return count

    def find(self, task_id: str) -> BackgroundTask | None:
        """The task's current state, or None when the id is unknown."""
        task = self._tasks.get(task_id)
        return None if task is None else self._snapshot(task)

    def get(self, task_id: str) -> BackgroundTask:
        """The task's current state; raises `TaskNotFoundError` naming the known ids."""
        return self._snapshot(self._lookup(task_id))

    async def wait(self, task_id: str) -> BackgroundTask:
        """Wait until the task has ended; its final state (bound it: another process's task may run
        for as long as it likes)."""
        task = self._lookup(task_id)
        if task.execution is not None:
            await task.execution.done.wait()
        elif self.refresh_adopted is not None:  # another live process runs it: ask until it ended
            while self._adopted(task).status is TaskStatus.RUNNING:  # noqa: ASYNC110 (no event to wait on)
                await anyio.sleep(_ADOPTED_POLL_S)
        return self._snapshot(task)

    async def read_new(
        self, task_id: str, pattern: str | None = None, *, max_bytes: int = DEFAULT_READ_BYTES
    ) -> TaskOutputChunk:
        """Output written since the previous read (only lines matching ``pattern`` when given).

        Raises `re.error` for an invalid pattern before consuming anything.
        """
        task = self._lookup(task_id)
        regex = re.compile(pattern) if pattern else None
        lost = 0
        #: The read ends where memory's copy has a gap (lost bytes follow): no line completes there.
        gap_after = False
        if task.execution is not None:
            finished = task.execution.done.is_set()
            out = task.execution.out
            # The file holds ``saved_bytes``; past them (output the disk or a quota refused) memory's
            # head and tail are read, and what neither holds is said lost (round 28: it was unread).
            end = out.total_bytes if out.lost is not None else out.saved_bytes
            start = min(task.read_offset, end)
            if start < out.saved_bytes:
                take = min(out.saved_bytes - start, max_bytes)
                try:
                    data = await anyio.to_thread.run_sync(out.read_at, start, take)
                except OSError as exc:
                    raise SupervisorError(
                        f"the output file of task {task_id} ({out.path}) was replaced, rewritten or removed since the "
                        f"task wrote it ({exc.strerror or exc}); shellrt does not read what is there now. "
                        "Its output is lost: run the command again (write its output to a file of your "
                        "own to keep it)"
                    ) from exc
            else:
                begin, data = out.held_from(start, max_bytes)
                lost, start = begin - start, begin
                gap_after = len(data) < max_bytes and start + len(data) < end
        else:  # adopted: the file is all there is (still growing only while a live owner elsewhere runs it)
            adopted = self._adopted(task)
            finished = adopted.status is not TaskStatus.RUNNING
            end, data = await anyio.to_thread.run_sync(
                _read_adopted, adopted.output_path, task.read_offset, max_bytes
            )
            start = min(task.read_offset, end)
        pending = 0
        if not finished or start + len(data) < end:
            cut = data.rfind(b"\n") + 1
            if (cut == 0 and len(data) >= _MAX_PENDING_LINE) or gap_after:
                cut = len(data)
            if cut and data[cut - 1] != 0x0A:  # a cut inside a line: never inside a character (round 28)
                cut = len(trim_partial_utf8(data[:cut], at_start=False)) or cut
            # a sequence left open at the cut stays for the next read whole: it would take in what
            # the caller says after this chunk (round 26; `_escape_cut`), unless it is all there is
            from shellrt.supervisor._escape_cut import open_sequence_start  # only a cut needs it

            cut = open_sequence_start(data[:cut]) or cut
            pending = len(data) - cut
            data = data[:cut]
        task.read_offset = start + len(data)
        if data or lost:
            self._changed()
        more = task.read_offset + pending < end
        matched: int | None = None
        scanned: int | None = None
        if regex is not None:
            lines = data.split(b"\n")
            if lines and lines[-1] == b"":
                lines.pop()
            decoded = [safe_decode(line) for line in lines]
            kept = [line for line in decoded if regex.search(line)]
            scanned, matched = len(decoded), len(kept)
            # Each kept line settled on its own: a sequence a kept line opens and a dropped one
            # closed would take in the kept lines after it and the caller's notes (round 35).
            text = settled_lines("".join(line + "\n" for line in kept))
        else:
            text = safe_decode(data)
        if finished and not more:
            # The output's own end: a sequence it left open would take in the caller's notes after
            # the chunk (round 33). A read inside one sequence is left whole for the next (round 26).
            text = settled(text)
        return TaskOutputChunk(
            task=self._snapshot(task),
            text=text,
            new_bytes=len(data),
            matched_lines=matched,
            scanned_lines=scanned,
            more_available=more,
            pending_bytes=pending if not more else 0,
            lost_bytes=lost,
        )

    # --- control --------------------------------------------------------------
    async def stop(self, task_id: str, *, reason: str = "stopped by TaskStop") -> BackgroundTask:
        """Kill the task's whole tree (no-op when it already ended); its final state.

        An adopted task is never signalled: a dead owner's task is gone, and a
        live owner elsewhere is the one to stop its own task.
        """
        task = self._lookup(task_id)
        if task.execution is not None and not task.execution.done.is_set():
            task.stopped_by_us = True
            task.stop_reason = reason
            await task.execution.kill()
            self._changed()
        return self._snapshot(task)

    async def close(self) -> None:
        """Stop every running task (the session is ending), all at once."""
        async with anyio.create_task_group() as tg:
            for task in list(self._tasks.values()):
                tg.start_soon(self._stop_quietly, task.id)

    async def _stop_quietly(self, task_id: str) -> None:
        await self.stop(task_id, reason="stopped because the session closed")

    # --- internals -------------------------------------------------------------
    def _lookup(self, task_id: str) -> _Task:
        task = self._tasks.get(task_id.strip())
        if task is None:
            known = ", ".join(self._tasks) or "none"
            raise TaskNotFoundError(f"No background task with id {task_id!r}. Known task ids: {known}.")
        return task

    def _adopted(self, task: _Task) -> BackgroundTask:
        """An adopted task's state; one a live owner elsewhere runs is asked about again (round 18:
        it ended there, but here it counted against the task cap and read as running for good)."""
        assert task.adopted is not None
        if task.adopted.status is TaskStatus.RUNNING and self.refresh_adopted is not None:
            newer = self.refresh_adopted(task.adopted)
            if newer is not None:
                task.adopted = newer  # saved with the registry's next write
        return task.adopted

    def _snapshot(self, task: _Task) -> BackgroundTask:
        ex = task.execution
        if ex is None:
            return self._adopted(task)
        status = ex.status if ex.done.is_set() else None
        note: str | None = None
        if status is None:
            state = TaskStatus.RUNNING
        elif task.stopped_by_us:
            state, note = TaskStatus.STOPPED, task.stop_reason
        elif status.oom_killed:
            state, note = TaskStatus.KILLED, OOM_NOTE
        elif status.sandbox_failure:
            # The sandbox ended it (bwrap ends running commands whose masks went stale, round 29;
            # a docker container died): its signal or exit code is not the command's.
            state = TaskStatus.KILLED if status.signal is not None else TaskStatus.FAILED
            note = f"the sandbox ended it: {status.sandbox_failure}"
        elif status.signal is not None and ex.killed_by_us:
            state, note = TaskStatus.KILLED, f"killed by shellrt (signal {_signal_name(status.signal)})"
        elif status.signal is not None:
            state = TaskStatus.KILLED
            note = (
                f"died unexpectedly: killed by signal {_signal_name(status.signal)} sent from outside shellrt"
            )
        elif status.exit_code == 0:
            state = TaskStatus.COMPLETED
        else:
            state = TaskStatus.FAILED
            if status.exit_code > 128 and status.exit_code - 128 < 65:
                note = (
                    f"exit code {status.exit_code} usually means a process was killed by "
                    f"{_signal_name(status.exit_code - 128)}"
                )
        if ex.done.is_set() and task.ended_at is None:
            task.ended_at = datetime.now(UTC)
        lost = ex.loss_report()
        extra = [*ex.notes, *([lost] if lost else [])]
        if extra:
            note = "; ".join([*(n for n in [note] if n), *extra])
        return BackgroundTask(
            id=task.id,
            command=task.command,
            description=task.description,
            status=state,
            exit_code=None if status is None else status.exit_code,
            signal=None if status is None else status.signal,
            pid=ex.process.pid,
            output_path=ex.out.path,
            stderr_path=ex.err.path if ex.err else None,
            total_bytes=ex.total_bytes,
            started_at=task.started_at,
            ended_at=task.ended_at,
            note=note,
        )


def _signal_name(signum: int) -> str:
    try:
        return f"{_signal.Signals(signum).name} ({signum})"
    except ValueError:
        return str(signum)


def _read_adopted(path: Path, offset: int, size: int) -> tuple[int, bytes]:
    """An adopted task's file: its size, and up to ``size`` bytes from ``offset`` (``0, b""`` when it
    is not a regular file reached without a link: a FIFO blocked the read for ever, a link was read
    through; red team round 48). No inode was recorded for it, so a regular file renamed there is read."""
    try:
        fd = open_own(path, os.O_RDONLY, None)
    except OSError:
        return 0, b""
    try:
        end = os.fstat(fd).st_size
        start = min(offset, end)
        take = min(end - start, size)
        return end, os.pread(fd, take, start) if take > 0 else b""
    except OSError:
        return 0, b""
    finally:
        os.close(fd)
