"""Docker faults said truthfully to the model and the operator (issue 16, item 4).

Real container, real ``docker kill``: the Bash tool result of a command whose
container died is an error that says so, and ``shellrt run --json`` carries
``sandbox_failure`` with exit status 125.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

import shellrt
from sandbox import DockerConfig
from tests._docker_support import BUSYBOX, owned_containers, require_docker

pytestmark = pytest.mark.anyio


def _runs(container: str, command: str) -> bool:
    """Whether a process of ``container`` has ``command`` as its command line (`docker top`)."""
    top = subprocess.run(["docker", "top", container, "-o", "pid,args"], capture_output=True, text=True, timeout=60)
    return any(line.split(None, 1)[1:] == [command] for line in top.stdout.splitlines()[1:])


async def _kill_when_running(pid: int) -> None:
    """``docker kill`` the container owned by ``pid`` once ``sleep 30`` runs in it.

    Listed again at every look, running ones only: a fixed second was too short under load
    (CI92: the kill came before the command started, and shellrt rightly ran it in a new
    container), and a list taken once held the never-started masks probe (CI127), in which the
    command never runs.
    """
    for _ in range(900):
        ids = owned_containers(pid, running=True)
        if any(_runs(cid, "sleep 30") for cid in ids):
            subprocess.run(["docker", "kill", *ids], capture_output=True, timeout=60)
            return
        await anyio.sleep(0.1)
    raise AssertionError(f"no container of {pid} ran the command: {owned_containers(pid)}")


async def test_bash_result_says_the_container_was_killed(tmp_path: Path) -> None:
    require_docker()
    ws = tmp_path / "ws"
    ws.mkdir()
    async with shellrt.Runtime(
        workspace=ws,
        sandbox=DockerConfig(image=BUSYBOX),
        mode="bypassPermissions",
        session_dir=tmp_path / "session",
    ) as rt:
        await rt.run({"type": "tool_use", "id": "warm", "name": "Bash", "input": {"command": "true"}})
        user: dict[str, Any] = {}
        async with anyio.create_task_group() as tg:
            tg.start_soon(_kill_when_running, os.getpid())

            async def call() -> None:
                nonlocal user
                user = await rt.run(
                    {"type": "tool_use", "id": "k", "name": "Bash", "input": {"command": "sleep 30"}}
                )

            tg.start_soon(call)
        [block] = user["content"]
        text = block["content"] if isinstance(block["content"], str) else block["content"][0]["text"]
        assert block["is_error"] is True, text
        assert "The sandbox container died or was killed" in text, text
        assert "Exit code 255" not in text
        # The session goes on in a fresh container.
        again = await rt.run({"type": "tool_use", "id": "n", "name": "Bash", "input": {"command": "echo ok"}})
        assert again["content"][0]["is_error"] is False


def test_run_json_reports_sandbox_failure(tmp_path: Path) -> None:
    require_docker()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.Popen(
        [sys.executable, "-m", "shellrt", "run", "--sandbox", "docker", "--image", BUSYBOX,
         "--workspace", str(tmp_path), "--json", "--", "sleep 30"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        anyio.run(_kill_when_running, proc.pid)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    report = json.loads(out)
    assert proc.returncode == 125, err
    assert report["exit_code"] == 125
    assert report["sandbox_failure"] and "container" in report["sandbox_failure"]
    assert "The sandbox container died or was killed" in report["output"]

