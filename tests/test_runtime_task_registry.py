"""The background-task registry across restarts: tasks.json, a real SIGKILL of the owner, pid identity."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.runtime import Runtime
from shellrt.runtime.task_registry import TASKS_FILE, ProcessIdentity
from tests._proc_words import shown_words
from tests._session_owner import start_session_owner
from tests.test_server_jsonl import JsonlClient, bash, text_of

_fresh = iter(range(1, 1_000_000))


def _id(prefix: str) -> str:
    return f"{prefix}-{os.getpid()}-{time.monotonic_ns()}-{next(_fresh)}"


def _use(name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": _id(name), "name": name, "input": tool_input}


def _registry(session_dir: Path) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = json.loads((session_dir / TASKS_FILE).read_text())["tasks"]
    return records


def _wait_for(predicate: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


# --- a real SIGKILL of a serving process between two halves -----------------------------------
@pytest.mark.parametrize("sandbox", ["local", "bwrap"])
def test_a_task_of_a_sigkilled_server_is_reported_dead_and_its_output_stays_readable(
    tmp_path: Path, sandbox: str
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    args = ("--sandbox", sandbox, "--mode", "bypassPermissions", "--session", "crash-tasks")
    session_dir = tmp_path / "shellrt-home" / "sessions" / "crash-tasks"
    first = JsonlClient(ws, *args)
    try:
        started = first.send(bash(_id("bg"), "echo first-half-output; sleep 120", run_in_background=True))
        found = re.search(r"task id (\w+)", text_of(started["content"][0]))
        assert found, started
        task_id = found.group(1)
        record = next(r for r in _registry(session_dir) if r["task"]["id"] == task_id)
        assert record["task"]["status"] == "running" and record["process"]["pid"] == record["task"]["pid"]
        assert stat.S_IMODE((session_dir / TASKS_FILE).stat().st_mode) == 0o600
        output = Path(record["task"]["output_path"])
        _wait_for(lambda: b"first-half-output" in output.read_bytes())
        task_pid = int(record["task"]["pid"])
    finally:
        first.proc.send_signal(signal.SIGKILL)  # the owner dies without a word
        first.proc.wait(10)
    second = JsonlClient(ws, *args)
    try:
        read = text_of(second.send(_use("TaskOutput", {"task_id": task_id}))["content"][0])
        assert f"Task {task_id}: killed" in read and "died with its owner" in read, read
        assert "running" not in read.split("\n", 1)[0]
        assert "first-half-output" in read, read
        stop = second.send(_use("TaskStop", {"task_id": task_id}))["content"][0]
        stopped = text_of(stop)
        assert "had already ended" in stopped and "died with its owner" in stopped, stopped
        assert "Nothing to stop" in stopped
        # The registry now says so too, for the next reopening.
        again = next(r for r in _registry(session_dir) if r["task"]["id"] == task_id)
        assert again["task"]["status"] == "killed" and again["process"] is None
    finally:
        assert second.close() == 0
    # The owner's watchdog took the task down with it; nothing was left running.
    _wait_for(lambda: ProcessIdentity.of(task_pid) is None or not _same_command(task_pid))


def _same_command(pid: int) -> bool:
    return "sleep" in " ".join(shown_words(pid))


# --- pid identity: a recycled pid is never signalled ------------------------------------------
@pytest.fixture
def sleepers() -> Iterator[list[subprocess.Popen[bytes]]]:
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)


def _sleeper(procs: list[subprocess.Popen[bytes]], owner_pid: int | None = None) -> subprocess.Popen[bytes]:
    # ``owner_pid``: started as that owner's command is (its marker): the only kind a reopening kills.
    env = None if owner_pid is None else {**os.environ, "SHELLRT_RUN_ID": f"local-{owner_pid}x0123456789ab-1"}
    proc = subprocess.Popen(["sleep", "60"], start_new_session=True, env=env)
    procs.append(proc)
    _wait_for(lambda: ProcessIdentity.of(proc.pid) is not None)
    return proc


def _task(task_id: str, pid: int, output: Path) -> dict[str, Any]:
    return {
        "id": task_id,
        "command": f"run {task_id}",
        "status": "running",
        "pid": pid,
        "output_path": str(output),
        "started_at": "2026-01-01T00:00:00Z",
    }


@pytest.mark.anyio
async def test_reopening_judges_each_task_by_process_identity(
    tmp_path: Path, sleepers: list[subprocess.Popen[bytes]]
) -> None:
    session_dir = tmp_path / "session"
    async with Runtime(tmp_path, "local", session_id="identity", session_dir=session_dir):
        pass
    gone = subprocess.Popen(["true"])
    gone.wait()
    dead_owner = {"pid": gone.pid, "start_ticks": 1, "boot_id": ProcessIdentity.of(os.getpid()).boot_id}  # type: ignore[union-attr]
    recycled, foreign_task = (_sleeper(sleepers) for _ in range(2))
    foreign_owner = start_session_owner(session_dir, sleepers)  # a live owner holds the session (round 51)
    survivor = _sleeper(sleepers, owner_pid=gone.pid)

    def ident(proc: subprocess.Popen[bytes], shift: int = 0) -> dict[str, Any]:
        identity = ProcessIdentity.of(proc.pid)
        assert identity is not None
        return {**identity.to_json(), "start_ticks": identity.start_ticks + shift}

    output = tmp_path / "out.txt"
    output.write_text("kept line\n")
    records = [
        # Same pid, another start time: the pid was recycled; it must not be signalled.
        {"task": _task("brecyc", recycled.pid, output), "process": ident(recycled, -1), "owner": dead_owner},
        # The very process, still alive after its owner died: killed now.
        {"task": _task("bsurvi", survivor.pid, output), "process": ident(survivor), "owner": dead_owner},
        # Its owner still runs: it stays the owner's, untouched.
        {
            "task": _task("bforgn", foreign_task.pid, output),
            "process": ident(foreign_task),
            "owner": ident(foreign_owner),
        },
    ]
    (session_dir / TASKS_FILE).write_text(json.dumps({"version": 1, "tasks": records}))
    async with Runtime(tmp_path, "local", session_id="identity", session_dir=session_dir) as rt:
        assert survivor.wait(10) == -signal.SIGKILL
        assert recycled.poll() is None, "a recycled pid was signalled"
        assert foreign_task.poll() is None
        tasks = {t.id: t for t in rt.supervisor.tasks.list()}  # type: ignore[union-attr]
        assert tasks["brecyc"].status == "killed" and "died with its owner" in (tasks["brecyc"].note or "")
        assert tasks["bsurvi"].status == "killed" and "outlived its owner" in (tasks["bsurvi"].note or "")
        assert tasks["bforgn"].status == "running" and "still has this session open" in (
            tasks["bforgn"].note or ""
        )
        assert any("brecyc" in d for d in rt.diagnostics)
        msg = {"role": "assistant", "content": [_use("TaskStop", {"task_id": "bforgn"})]}
        refused = (await rt.run(msg))["content"][0]
        assert refused["is_error"] and "cannot be stopped" in text_of(refused)
        assert foreign_task.poll() is None
        msg = {"role": "assistant", "content": [_use("TaskOutput", {"task_id": "brecyc"})]}
        read = text_of((await rt.run(msg))["content"][0])
        assert "kept line" in read and "died with its owner" in read
        # What was read stays read across the next reopening.
        assert next(r for r in _registry(session_dir) if r["task"]["id"] == "brecyc")["read_offset"] == 10


@pytest.mark.anyio
async def test_the_registry_is_written_as_tasks_change(tmp_path: Path) -> None:
    session_dir = tmp_path / "session"
    async with Runtime(tmp_path, "local", mode="bypassPermissions", session_dir=session_dir) as rt:
        msg = {
            "role": "assistant",
            "content": [_use("Bash", {"command": "sleep 0.5; echo done", "run_in_background": True})],
        }
        text = text_of((await rt.run(msg))["content"][0])
        found = re.search(r"task id (\w+)", text)
        assert found, text
        (record,) = _registry(session_dir)
        assert record["task"]["status"] == "running" and record["owner"]["pid"] == os.getpid()
        # Nobody asks: the task's end is written anyway.
        with anyio.fail_after(10):
            while _registry(session_dir)[0]["task"]["status"] == "running":
                await anyio.sleep(0.05)
        (record,) = _registry(session_dir)
        assert record["task"]["status"] == "completed" and record["task"]["exit_code"] == 0
        long = {
            "role": "assistant",
            "content": [_use("Bash", {"command": "sleep 60", "run_in_background": True})],
        }
        await rt.run(long)
    statuses = {r["task"]["status"] for r in _registry(session_dir)}
    assert statuses == {"completed", "stopped"}, statuses
