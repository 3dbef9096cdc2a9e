"""Red team round 35 (runtime): the background-task cap's refusal names no task of another session.

One ``shellrt serve --http`` runs the calls of every MCP session on one Runtime, so the cap counts
all their tasks. Its refusal listed every running task id ("running: <id>, ..."): session A, refused,
learnt session B's task ids. The ids are not secrets that grant access (round 12 made a task reachable
only from its own session), but they name another client's work; the refusal now lists none.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import anyio
import pytest

import shellrt
from shellrt.supervisor.tasks import TASK_CAP_ENV
from tests.test_server_jsonl import bash, marker_pids, text_of


def test_cap_refusal_lists_no_task_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Failed before: 1 of 1 refusals named the running task's id (under ``serve --http`` the
    running tasks are every MCP session's: the same refusal showed session A session B's ids).
    In process, not through a served child: the refusal is the Runtime's, and a server costs ~10 s."""
    monkeypatch.setenv(TASK_CAP_ENV, "1")
    marker = f"r35-capids-{time.time_ns()}"
    ws = tmp_path / "ws"
    ws.mkdir()

    async def scenario() -> None:
        async with shellrt.Runtime(ws, "local", session_dir=tmp_path / "s", mode="bypassPermissions") as rt:
            first = bash("b1", f"sleep 1000 # {marker}")
            first["input"]["run_in_background"] = True
            started = text_of((await rt.run([first]))["content"][0])
            found = re.search(r"task id (\w+)", started)
            assert found, started
            task_id = found.group(1)
            second = bash("a1", "true")
            second["input"]["run_in_background"] = True
            out = (await rt.run([second]))["content"][0]
            text = text_of(out)
            assert out["is_error"] and "Not started" in text and TASK_CAP_ENV in text, text
            assert task_id not in text, f"the refusal named a running task's id: {text}"
            assert "TaskStop" in text, text  # still says what to do next

    anyio.run(scenario)
    assert not marker_pids(marker), "the task outlived the session"
