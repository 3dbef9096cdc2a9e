"""Red team, round 51 (supervisor7): a forged ``tasks.json`` naming a live process as a task's owner.

The background-task registry lives in the session directory, which a command on the local backend
writes (same uid). Round 50 made a reopening kill only what the dead owner started; a record whose
*owner* is alive is left to that owner: reported "running", never signalled, TaskStop refused
("stop it there"), and counted against the session's background-task cap, asked about again at
every query. The owner's identity (pid, start time, boot id) is public in ``/proc``: a record naming
init, or any long-lived process of the host, as the owner of ``SHELLRT_MAX_BACKGROUND_TASKS``
"running" tasks filled the cap of every later reopening of that session for good (no background
task could start, TaskStop could not free a slot), and told the model that process "still has this
session open". An owner counts as live only while it holds the session's in-use lock, as every
`Runtime` does from its start to its close.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shellrt.runtime import Runtime
from shellrt.runtime.task_registry import TASKS_FILE, ProcessIdentity
from shellrt.supervisor import TaskStatus
from tests._session_owner import start_session_owner
from tests.test_server_jsonl import bash, text_of

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


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


def _record(task_id: str, pid: int, process: dict[str, Any], owner: dict[str, Any], out: Path) -> dict[str, Any]:
    task = {
        "id": task_id,
        "command": f"run {task_id}",
        "status": "running",
        "pid": pid,
        "output_path": str(out),
        "started_at": "2026-01-01T00:00:00Z",
    }
    return {"task": task, "process": process, "owner": owner}


async def test_a_live_process_that_does_not_hold_the_session_is_no_owner(
    tmp_path: Path, procs: list[subprocess.Popen[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed before (1 of 1): the forged tasks held the cap ("Not started"), were "running" and said
    their owner, init, "still has this session open"."""
    monkeypatch.setenv("SHELLRT_MAX_BACKGROUND_TASKS", "2")
    ws, session_dir = tmp_path / "ws", tmp_path / "session"
    ws.mkdir()
    kw: dict[str, Any] = {"session_id": "liveowner51", "session_dir": session_dir, "mode": "bypassPermissions"}
    async with Runtime(ws, "local", **kw):
        pass
    out = tmp_path / "out.txt"
    out.write_text("line\n")
    # Control: a stand-in owner that holds the session's in-use lock as a live Runtime does: its
    # task stays its own, untouched.
    holder = start_session_owner(session_dir, procs)
    held_task = subprocess.Popen(["sleep", "3051"], start_new_session=True)
    procs.append(held_task)
    init = _identity(1)  # public in /proc, alive for good; never a shellrt owner of this session
    records = [
        _record("bforg1", 1, init, init, out),
        _record("bforg2", 1, init, init, out),
        _record("bheld1", held_task.pid, _identity(held_task.pid), _identity(holder.pid), out),
    ]
    (session_dir / TASKS_FILE).write_text(json.dumps({"version": 1, "tasks": records}))
    async with Runtime(ws, "local", **kw) as rt:
        assert rt.supervisor is not None
        tasks = {t.id: t for t in rt.supervisor.tasks.list()}
        forged = [tasks["bforg1"], tasks["bforg2"]]
        claimed = [t.id for t in forged if t.status is TaskStatus.RUNNING or "still has this session" in (t.note or "")]
        assert not claimed, f"tasks of an owner that does not hold the session were adopted as running: {forged}"
        assert all("nothing was signalled" in (t.note or "") for t in forged), forged
        assert tasks["bheld1"].status is TaskStatus.RUNNING, tasks["bheld1"]
        assert "still has this session open" in (tasks["bheld1"].note or ""), tasks["bheld1"]
        text = text_of((await rt.run([bash("c1", "echo bg-ok", run_in_background=True)]))["content"][0])
        assert "Not started" not in text and re.search(r"task id \w+", text), text
        assert held_task.poll() is None and holder.poll() is None, "a live owner's task was signalled"
