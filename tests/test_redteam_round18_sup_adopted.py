"""Red team, round 18: a background task another process runs on the same session.

Two shellrt processes may serve one session directory (two MCP clients, a CLI beside a server).
The second adopts the first's running tasks from ``tasks.json`` when it opens: readable, never
signalled ("stop it there"). It judged them once, at opening, and kept them "running" for good --
after they ended and after their owner died -- so each held a slot of the second process's task
cap (``SHELLRT_MAX_BACKGROUND_TASKS``) forever: with the first's tasks at the cap, the second could
never start one again, and TaskOutput called the ended task running. An adopted task a live owner
runs is now asked about again whenever it is queried.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
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
def sleepers() -> Iterator[list[subprocess.Popen[bytes]]]:
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)


def _sleeper(
    procs: list[subprocess.Popen[bytes]], owner_pid: int | None = None
) -> tuple[subprocess.Popen[bytes], dict[str, Any]]:
    # ``owner_pid``: started as that owner's command is (its marker): the only kind a reopening kills.
    env = None if owner_pid is None else {**os.environ, "SHELLRT_RUN_ID": f"local-{owner_pid}x0123456789ab-1"}
    proc = subprocess.Popen(["sleep", "60"], start_new_session=True, env=env)
    procs.append(proc)
    deadline = time.monotonic() + 10
    while (identity := ProcessIdentity.of(proc.pid)) is None:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    return proc, identity.to_json()


async def test_a_task_that_ended_under_its_live_owner_frees_the_cap_of_the_other_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHELLRT_MAX_BACKGROUND_TASKS", "1")
    ws, session_dir = tmp_path / "ws", tmp_path / "session"
    ws.mkdir()
    kw: dict[str, Any] = {"session_id": "shared18", "session_dir": session_dir, "mode": "bypassPermissions"}
    async with Runtime(ws, "local", **kw) as first:
        assert first.supervisor is not None
        started = text_of(
            (await first.run([bash("a1", "sleep 1; echo first-done", run_in_background=True)]))["content"][0]
        )
        found = re.search(r"task id (\w+)", started)
        assert found, started
        task_id = found.group(1)
        async with Runtime(ws, "local", **kw) as second:
            assert second.supervisor is not None
            tasks = second.supervisor.tasks
            assert tasks.get(task_id).status is TaskStatus.RUNNING  # adopted, its owner runs it
            # Before: TaskOutput answered at once "running" with no output, and did so for good.
            wait = {"task_id": task_id, "wait_ms": 30_000}
            read = text_of((await second.run([_use("b1", "TaskOutput", wait)]))["content"][0])
            assert "first-done" in read and "completed" in read, read
            assert tasks.get(task_id).status is TaskStatus.COMPLETED, tasks.get(task_id)
            # Before: the ended task held the only slot of the cap in this process for good.
            text = text_of(
                (await second.run([bash("b2", "echo second-ok", run_in_background=True)]))["content"][0]
            )
            assert "Not started" not in text and re.search(r"task id \w+", text), text
            stop = text_of((await second.run([_use("b3", "TaskStop", {"task_id": task_id})]))["content"][0])
            assert "cannot be stopped" not in stop, stop


def _use(id_: str, name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": id_, "name": name, "input": tool_input}


async def test_a_task_whose_owner_died_after_the_adoption_is_judged_then(
    tmp_path: Path, sleepers: list[subprocess.Popen[bytes]]
) -> None:
    ws, session_dir = tmp_path / "ws", tmp_path / "session"
    ws.mkdir()
    async with Runtime(ws, "local", session_id="owner18", session_dir=session_dir):
        pass
    owner = start_session_owner(session_dir, sleepers)  # a live owner holds the session (round 51)
    owner_id = ProcessIdentity.of(owner.pid).to_json()  # type: ignore[union-attr]
    task_proc, task_id_json = _sleeper(sleepers, owner_pid=owner.pid)
    output = tmp_path / "out.txt"
    output.write_text("line of the owner's task\n")
    record = {
        "task": {
            "id": "bownr1",
            "command": "run bownr1",
            "status": "running",
            "pid": task_proc.pid,
            "output_path": str(output),
            "started_at": "2026-01-01T00:00:00Z",
        },
        "process": task_id_json,
        "owner": owner_id,
    }
    (session_dir / TASKS_FILE).write_text(json.dumps({"version": 1, "tasks": [record]}))
    async with Runtime(ws, "local", session_id="owner18", session_dir=session_dir) as rt:
        assert rt.supervisor is not None
        tasks = rt.supervisor.tasks
        assert tasks.get("bownr1").status is TaskStatus.RUNNING
        assert task_proc.poll() is None, "a live owner's task was signalled"
        owner.kill()
        owner.wait(10)
        # Before: still "running", and the process that outlived its owner ran on.
        deadline = time.monotonic() + 10
        while (state := tasks.get("bownr1")).status is TaskStatus.RUNNING and time.monotonic() < deadline:
            await anyio.sleep(0.05)
        assert state.status is TaskStatus.KILLED and "outlived its owner" in (state.note or ""), state
        assert task_proc.wait(10) != 0
        assert tasks.running_count() == 0
    assert os.path.exists(output)
