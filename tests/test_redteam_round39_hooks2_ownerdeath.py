"""Red team, round 39 (hooks2): shellrt killed (SIGKILL) while a hook runs and the session is paused.

Before a hook runs on the host, every process of the session's sandboxes is stopped and only
shellrt continues them (`shellrt.supervisor._host_pause`). A real shellrt process is killed with
SIGKILL during a hook: on docker the container's init and executor were among the stopped, so the
executor never read its attach stream's end and the container stayed with every process in ``T``
(until another start reaped it); on every backend the hook itself (a ``sleep`` it ran) ran on.
Now nothing of the session or of the hook outlives shellrt.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import _nonroot
from tests._bwrap_session import require_bwrap
from tests._docker_support import DEBIAN, owned_containers, require_docker

ROOT = Path(__file__).resolve().parents[1]

#: The shellrt process: a background task with sleepers and a counting loop, then a call whose
#: PreToolUse hook (once armed) says it is in, and sleeps.
_CHILD = r"""
import json, logging, os, sys, anyio, shellrt
logging.basicConfig(level=logging.WARNING)  # a replaced container says why in the log
from sandbox.config import BwrapConfig, DockerConfig
root, kind, task_mark, hook_mark = sys.argv[1:5]
ws = os.path.join(root, "ws")
backend = {
    "bwrap": "bwrap",
    "bwrap1": BwrapConfig(persistent=False),
    "docker": DockerConfig(image=sys.argv[5] if len(sys.argv) > 5 else "", workspace_mode="bind"),
}[kind]

async def main():
    async with shellrt.Runtime(ws, backend, session_dir=os.path.join(root, "s"), mode="bypassPermissions") as rt:
        loop = f"for i in 1 2 3; do sleep {task_mark} & done; n=0; while :; do n=$((n+1)); echo $n > cnt; sleep 0.01; done"
        use = {"type": "tool_use", "id": "a", "name": "Bash", "input": {"command": loop, "run_in_background": True}}
        print(await rt.run([use]), flush=True)
        while not os.path.exists(os.path.join(ws, "cnt")):
            await anyio.sleep(0.01)
        open(os.path.join(root, "armed"), "w").close()
        await rt.run([{"type": "tool_use", "id": "b", "name": "Bash", "input": {"command": "true"}}])

anyio.run(main)
"""


def _marked(mark: str) -> list[tuple[int, str]]:
    """(pid, state) of each host process whose argv is ``sleep <mark>``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if argv[:2] == [b"sleep", mark.encode()]:
            found.append((int(entry), state))
    return found


def _killed_in_a_hook(tmp_path: Path, kind: str, marks: tuple[str, str]) -> int:
    """Start shellrt on ``kind``, SIGKILL it during its hook (the task paused); its pid."""
    task_mark, hook_mark = marks
    home, ws = tmp_path / "home", tmp_path / "ws"
    for d in (home / ".shellrt", ws):
        d.mkdir(parents=True)
    os.chmod(tmp_path, 0o755)
    hook = home / "hook.sh"
    hook.write_text(f"#!/bin/sh\ncat >/dev/null\n[ -f {tmp_path}/armed ] || exit 0\ntouch {tmp_path}/inhook\nsleep {hook_mark}\n")
    os.chmod(hook, 0o755)
    settings = {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": str(hook)}]}]}}
    (home / ".shellrt" / "settings.json").write_text(json.dumps(settings))
    env = {**os.environ, "HOME": str(home), "SHELLRT_MANAGED_SETTINGS": str(tmp_path / "managed.json")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))
    log = (tmp_path / "log").open("wb")
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(tmp_path), kind, task_mark, hook_mark, DEBIAN],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=tmp_path,
    )
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "inhook").exists():
            assert child.poll() is None, (tmp_path / "log").read_text()
            assert time.monotonic() < deadline, (tmp_path / "log").read_text()
            time.sleep(0.02)
        deadline = time.monotonic() + 10
        while not all(state == "T" for _, state in _marked(task_mark)) or not _marked(task_mark):
            assert time.monotonic() < deadline, _never_paused(tmp_path, child.pid, task_mark)
            time.sleep(0.02)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
        log.close()
    return child.pid


def _never_paused(tmp_path: Path, owner: int, mark: str) -> str:
    """What to say when the task's sleepers were not all seen stopped: what shellrt logged, its
    containers, and the host's sleepers (CI111 saw none at all, once)."""
    sleepers = subprocess.run(["ps", "-eo", "pid,stat,args"], capture_output=True, text=True, check=False)
    return (
        f"the task was never paused: {_marked(mark)}\nlog:\n{(tmp_path / 'log').read_text()[-4000:]}\n"
        f"containers: {owned_containers(owner)}\nsleepers:\n"
        + "\n".join(line for line in sleepers.stdout.splitlines() if " sleep " in line)[-3000:]
    )


def _nothing_left(marks: tuple[str, str], within: float = 10.0) -> list[tuple[int, str]]:
    deadline = time.monotonic() + within
    while (left := _marked(marks[0]) + _marked(marks[1])) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def _marks() -> tuple[str, str]:
    base = 3000 + os.getpid() % 4000 * 2
    return str(base + 1), str(base + 2)


def _reap(left: list[tuple[int, str]]) -> None:
    for pid, _ in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


@pytest.mark.parametrize("kind", ["bwrap", "bwrap1"])
def test_shellrt_killed_in_a_hook_leaves_nothing_bwrap(tmp_path: Path, kind: str) -> None:
    """Failed before: the paused task died with bwrap, but the hook's ``sleep`` ran on."""
    require_bwrap()
    marks = _marks()
    _killed_in_a_hook(tmp_path, kind, marks)
    left = _nothing_left(marks)
    _reap(left)
    assert not left, f"left behind after shellrt died in a hook: {left}"


def test_shellrt_killed_in_a_hook_leaves_nothing_docker(tmp_path: Path) -> None:
    """Failed before: the container stayed with its init, executor and task stopped for good."""
    require_docker()
    marks = _marks()
    owner = _killed_in_a_hook(tmp_path, "docker", marks)
    left = _nothing_left(marks, within=20.0)
    deadline = time.monotonic() + 20
    while (containers := owned_containers(owner)) and time.monotonic() < deadline:
        time.sleep(0.1)
    _reap(left)
    for container in containers:
        subprocess.run(["docker", "rm", "-f", container], capture_output=True, check=False)
    assert not left, f"left behind after shellrt died in a hook: {left}"
    assert not containers, f"its container outlived it: {containers}"


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(__file__, "test_shellrt_killed_in_a_hook_leaves_nothing_bwrap")
