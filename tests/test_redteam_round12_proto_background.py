"""Red team round 12 (protocol): the model cannot exhaust shellrt's descriptors with background tasks.

Each background task holds about three of the server's file descriptors (its spool and pipes) while
it runs, and nothing capped how many a session started. One message of 400 ``run_in_background``
calls, under the common soft limit of 1,024 open files, used every descriptor of ``shellrt serve``:
the last calls failed with ``OSError: Too many open files`` and so did every later call of the
session (a plain ``echo ok`` too), until the client closed it. A session now runs at most
``SHELLRT_MAX_BACKGROUND_TASKS`` (default 64) background tasks at once; one more is refused before it
starts, with what to do (stop one with TaskStop, or wait for one to end).
"""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

import shellrt
from shellrt.runtime.background_cap import DEFAULT_MAX_BACKGROUND_TASKS, max_background_tasks
from tests._serve_cli import bypass_serve_argv
from tests.test_server_jsonl import bash, marker_pids, text_of

pytestmark = pytest.mark.anyio


def _low_nofile() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))


@pytest.mark.slow  # 26 s in CI56: its file is handed out first (tests/conftest.py)
def test_a_flood_of_background_tasks_leaves_the_session_working(tmp_path: Path) -> None:
    """Failed on the old code: after 400 background tasks in one message, ``echo ok`` failed with
    ``OSError: [Errno 24] Too many open files``."""
    ws = tmp_path / "ws"
    ws.mkdir()
    marker = f"r12-flood-{time.time_ns()}"
    env = {**os.environ, "SHELLRT_HOME": str(tmp_path / "home"), "HOME": str(tmp_path)}
    env.pop("SHELLRT_MAX_BACKGROUND_TASKS", None)
    proc = subprocess.Popen(
        bypass_serve_argv(ws, transport=("--jsonl",)),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        preexec_fn=_low_nofile,
    )
    assert proc.stdin is not None and proc.stdout is not None

    def send(value: Any) -> dict[str, Any]:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(value).encode() + b"\n")
        proc.stdin.flush()
        line = proc.stdout.readline()
        assert line, "the server closed its output"
        answer: dict[str, Any] = json.loads(line)
        return answer

    try:
        blocks = [bash(f"bg{i}", f"sleep 300 # {marker}", run_in_background=True) for i in range(400)]
        flood = send({"role": "assistant", "content": blocks})["content"]
        started = [b for b in flood if not b.get("is_error")]
        refused = [b for b in flood if b.get("is_error")]
        assert len(started) == DEFAULT_MAX_BACKGROUND_TASKS, len(started)
        assert refused and all("TaskStop" in text_of(b) for b in refused), text_of(refused[0])
        assert not any("Too many open files" in text_of(b) for b in flood)
        after = send({"role": "assistant", "content": [bash("after", "echo ok")]})["content"][0]
        assert not after.get("is_error") and text_of(after).strip() == "ok", after
        # Stopping one makes room for one more.
        task_id = re.search(r"task id (\w+)", text_of(started[0]))
        assert task_id
        stop = {"type": "tool_use", "id": "stop", "name": "TaskStop", "input": {"task_id": task_id.group(1)}}
        assert not send(stop)["content"][0].get("is_error")
        again = send(bash("again", f"sleep 300 # {marker}", run_in_background=True))["content"][0]
        assert not again.get("is_error"), again
    finally:
        proc.stdin.close()
        proc.wait(60)
    assert not marker_pids(marker), "background tasks outlived the session"


async def test_the_cap_counts_running_tasks_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ended tasks free their slot; the refusal names the cap and what to do; nothing is lost."""
    monkeypatch.setenv("SHELLRT_MAX_BACKGROUND_TASKS", "3")
    ws = tmp_path / "ws"
    ws.mkdir()
    async with shellrt.Runtime(ws, "local", session_dir=tmp_path / "s", mode="bypassPermissions") as rt:
        quick = [bash(f"q{i}", "true", run_in_background=True) for i in range(5)]
        for block in quick:  # each ends at once: never more than 3 running
            result = (await rt.run([block]))["content"][0]
            assert not result.get("is_error"), result
            task_id = re.search(r"task id (\w+)", text_of(result))
            assert task_id and rt.supervisor is not None
            await rt.supervisor.tasks.wait(task_id.group(1))
        slow = [bash(f"s{i}", "sleep 300", run_in_background=True) for i in range(5)]
        results = (await rt.run({"role": "assistant", "content": slow}))["content"]
        assert [bool(r.get("is_error")) for r in results] == [False, False, False, True, True]
        message = text_of(results[3])
        assert "3 background tasks" in message and "SHELLRT_MAX_BACKGROUND_TASKS" in message, message
        # A foreground command still runs.
        fg = (await rt.run([bash("fg", "echo fine")]))["content"][0]
        assert text_of(fg).strip() == "fine"


@pytest.mark.parametrize("raw", ["0", "-1", "many", "1.5"])
def test_a_bad_cap_setting_is_refused_with_what_to_write(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv("SHELLRT_MAX_BACKGROUND_TASKS", raw)
    with pytest.raises(ValueError, match="SHELLRT_MAX_BACKGROUND_TASKS"):
        max_background_tasks()


def test_the_cap_setting_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SHELLRT_MAX_BACKGROUND_TASKS", raising=False)
    assert max_background_tasks() == DEFAULT_MAX_BACKGROUND_TASKS
    monkeypatch.setenv("SHELLRT_MAX_BACKGROUND_TASKS", " 7 ")
    assert max_background_tasks() == 7
