"""Red team, round 52 (review51): the owner check read the host's whole lock table.

Round 51 counted a recorded owner as live only while it held the session's in-use lock, and found
the holders in ``/proc/locks``: every lock of every process on the host (the host's reader sees the
locks taken in containers and bwrap sandboxes too). Any process can add locks to that table without
bound: one process made 200,000 POSIX byte-range locks over 1,000 files of its own in 1.2 s, and
then one read of ``/proc/locks`` took 45 s (11 MB; the kernel walks the table from its start at
every 4 KiB it hands out, so the time grows with the square of the count; 50,000 locks: 0.7 s),
on the event loop of a reopening (every record of a dead owner's session, every 0.2 s while an
adopted task of a live owner is queried). A command in any sandbox of the host could stall
another session's reopening for as long as it liked. The holder is now judged from the owner's own
descriptors (``/proc/<owner>/fdinfo``: the kernel lists a descriptor's own locks there), a bounded
number of them: nothing whose size another process controls is read.
"""

from __future__ import annotations

import builtins
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shellrt.runtime.session_dir import hold_session_dir
from shellrt.runtime.task_registry import TASKS_FILE, ProcessIdentity, TaskRegistry
from shellrt.supervisor import TaskStatus
from shellrt.supervisor.tasks import TaskManager
from tests._session_owner import start_session_owner

#: A process that fills the host's lock table (POSIX byte-range locks on files of its own), then
#: says so and waits. 5,000 locks keep this test cheap; the table has no bound (see above).
_FLOOD = (
    "import fcntl, os, sys, time\n"
    "for f in range(50):\n"
    "    fd = os.open(os.path.join(sys.argv[1], f'lk{f}'), os.O_RDWR | os.O_CREAT, 0o600)\n"
    "    for i in range(100):\n"
    "        fcntl.lockf(fd, fcntl.LOCK_SH, 1, 2 * i)\n"
    "os.write(1, b'full')\n"
    "time.sleep(600)\n"
)


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)


def _identity(pid: int) -> dict[str, Any]:
    identity = ProcessIdentity.of(pid)
    assert identity is not None
    return identity.to_json()


def _record(task_id: str, pid: int, owner: dict[str, Any], out: Path) -> dict[str, Any]:
    task = {
        "id": task_id,
        "command": f"run {task_id}",
        "status": "running",
        "pid": pid,
        "output_path": str(out),
        "started_at": "2026-01-01T00:00:00Z",
    }
    return {"task": task, "process": _identity(pid), "owner": owner}


def test_the_owner_check_reads_no_host_wide_lock_table(
    tmp_path: Path, procs: list[subprocess.Popen[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed before (1 of 1): the reopening read ``/proc/locks`` (here ~300 KB: the 5,000 locks a
    process of the host made; 45 s at 200,000)."""
    session_dir, floods = tmp_path / "session", tmp_path / "floods"
    floods.mkdir()
    lock_fd = hold_session_dir(session_dir)  # this process is the session's Runtime
    try:
        flood = subprocess.Popen([sys.executable, "-I", "-c", _FLOOD, str(floods)], stdout=subprocess.PIPE)
        procs.append(flood)
        assert flood.stdout is not None
        assert flood.stdout.read(4) == b"full", "the lock flood did not start"
        holder = start_session_owner(session_dir, procs)
        task = subprocess.Popen(["sleep", "3052"], start_new_session=True)
        procs.append(task)
        out = tmp_path / "out.txt"
        out.write_text("line\n")
        records = [
            _record("bheld52", task.pid, _identity(holder.pid), out),  # a live owner: holds the lock
            _record("bflood52", task.pid, _identity(flood.pid), out),  # holds locks, not this one
        ]
        (session_dir / TASKS_FILE).write_text(json.dumps({"version": 1, "tasks": records}))

        opened: list[str] = []
        real_os_open, real_open = os.open, builtins.open

        def spy_os_open(path: Any, *args: Any, **kwargs: Any) -> int:
            opened.append(os.fsdecode(path) if isinstance(path, (str, bytes, os.PathLike)) else repr(path))
            return real_os_open(path, *args, **kwargs)

        def spy_open(file: Any, *args: Any, **kwargs: Any) -> Any:
            opened.append(os.fsdecode(file) if isinstance(file, (str, bytes, os.PathLike)) else repr(file))
            return real_open(file, *args, **kwargs)

        monkeypatch.setattr(os, "open", spy_os_open)
        monkeypatch.setattr(builtins, "open", spy_open)
        registry = TaskRegistry(session_dir, TaskManager())
        registry.reopen()
        monkeypatch.undo()

        tasks = {t.id: t for t in registry.tasks.list()}
        assert "/proc/locks" not in opened, "the owner check read the host's whole lock table"
        assert tasks["bheld52"].status is TaskStatus.RUNNING, tasks["bheld52"]
        assert "still has this session open" in (tasks["bheld52"].note or ""), tasks["bheld52"]
        assert tasks["bflood52"].status is not TaskStatus.RUNNING, tasks["bflood52"]
        assert "nothing was signalled" in (tasks["bflood52"].note or ""), tasks["bflood52"]
        assert task.poll() is None and holder.poll() is None, "a live owner's task was signalled"
    finally:
        os.close(lock_fd)
