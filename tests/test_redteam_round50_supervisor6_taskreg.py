"""Red team, round 50 (supervisor6): a forged ``tasks.json`` made a reopened session kill any process.

The background-task registry (`shellrt.runtime.task_registry`) lives in the session directory, which
a command on the local backend reaches (same uid). A record naming a "running" task with a dead
owner is judged at the next reopening: a process that outlived its owner is SIGKILLed, its group
too. Its identity (pid, start time, boot id) is public in ``/proc``: a forged record naming any
process of the caller's (an editor, a database, another session's shell) had it killed, after the
forging command and its session had long ended. Only a process whose environment as started
carries the marker shellrt gave that owner's commands is killed now.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shellrt.runtime import Runtime
from shellrt.runtime.task_registry import TASKS_FILE, ProcessIdentity

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


def _identity(proc: subprocess.Popen[bytes]) -> dict[str, Any]:
    deadline = time.monotonic() + 30  # until exec'd (the real condition): the identity is the sleep's
    while time.monotonic() < deadline:
        identity = ProcessIdentity.of(proc.pid)
        if identity is not None and b"sleep" in Path(f"/proc/{proc.pid}/cmdline").read_bytes():
            return identity.to_json()
        time.sleep(0.01)
    raise AssertionError("the sleeper did not start")


def _record(
    task_id: str, proc: subprocess.Popen[bytes], owner: dict[str, Any], output: Path
) -> dict[str, Any]:
    task = {
        "id": task_id,
        "command": f"run {task_id}",
        "status": "running",
        "pid": proc.pid,
        "output_path": str(output),
        "started_at": "2026-01-01T00:00:00Z",
    }
    return {"task": task, "process": _identity(proc), "owner": owner}


async def test_a_forged_registry_kills_only_what_its_dead_owner_started(
    tmp_path: Path, sleepers: list[subprocess.Popen[bytes]]
) -> None:
    """Failed before (2 of 2): the unmarked process (a stand-in for any of the caller's) and another
    live session's command were SIGKILLed, with their groups, at the reopening."""
    session_dir = tmp_path / "session"
    async with Runtime(tmp_path, "local", session_id="forged50", session_dir=session_dir):
        pass
    gone = subprocess.Popen(["true"])
    gone.wait()
    boot = ProcessIdentity.of(os.getpid())
    assert boot is not None
    dead_owner = {"pid": gone.pid, "start_ticks": 1, "boot_id": boot.boot_id}
    env = {k: v for k, v in os.environ.items() if k != "SHELLRT_RUN_ID"}
    victim = subprocess.Popen(["sleep", "3050"], start_new_session=True, env=env)
    sleepers.append(victim)
    # Control: what that owner did start (its marker, as `HostRunner` gives it) is killed as before.
    marked = {**env, "SHELLRT_RUN_ID": f"local-{gone.pid}x0123456789ab-1"}
    leftover = subprocess.Popen(["sleep", "3050"], start_new_session=True, env=marked)
    sleepers.append(leftover)
    # Another live session's command (its owner runs): named with that owner's pid, a wrong start.
    other_owner = subprocess.Popen(["sleep", "3050"], start_new_session=True, env=env)
    sleepers.append(other_owner)
    forged_owner = {**_identity(other_owner), "start_ticks": 1}
    others = {**env, "SHELLRT_RUN_ID": f"local-{other_owner.pid}x0123456789ab-1"}
    other_task = subprocess.Popen(["sleep", "3050"], start_new_session=True, env=others)
    sleepers.append(other_task)
    output = tmp_path / "out.txt"
    output.write_text("line\n")
    records = [
        _record("bvictm", victim, dead_owner, output),
        _record("bother", other_task, forged_owner, output),
        _record("bleftv", leftover, dead_owner, output),
    ]
    (session_dir / TASKS_FILE).write_text(json.dumps({"version": 1, "tasks": records}))
    async with Runtime(tmp_path, "local", session_id="forged50", session_dir=session_dir) as rt:
        assert rt.supervisor is not None
        assert leftover.wait(10) == -signal.SIGKILL, "the dead owner's own leftover was not killed"
        killed = [
            name
            for name, proc in (("unmarked", victim), ("another session's", other_task))
            if proc.poll() is not None
        ]
        assert not killed, f"processes the forged registry named were killed at the reopening: {killed}"
        tasks = {t.id: t for t in rt.supervisor.tasks.list()}
        assert "not signalled" in (tasks["bvictm"].note or ""), tasks["bvictm"]
        assert tasks["bvictm"].status == "killed"
        assert "outlived its owner" in (tasks["bleftv"].note or "")
