"""Red team, round 37 (hooks): a background task re-planted ``.git/config`` between the sweep and a hook.

Hooks run on the host, outside the sandbox. Before each hook the protected-files sweep reverts what
commands planted for host programs (round 6), but a background task rewriting ``.git/config`` in a
loop planted ``core.fsmonitor`` again before the operator's hook script (outside the workspace, so
no hook-load hash covers it) ran ``git status`` in the project: git ran the command's program on
the host as the operator, at the first call (bwrap, root). Now the session's running commands and
background tasks are stopped (every process in their pid namespaces) before the sweep and go on
after the hooks; when they cannot all be stopped, guard hooks block the call.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

import shellrt
from sandbox.config import DockerConfig
from tests import _nonroot
from tests._bwrap_session import require_bwrap
from tests._calls import block_text, one_call
from tests._docker_support import DEBIAN, require_docker

pytestmark = pytest.mark.anyio

#: A background task's loop: a repository whose config names the workspace's program as fsmonitor,
#: written again and again (a rename: no moment without it), counting its rounds.
_LOOP = (
    "n=0; while :; do n=$((n+1)); echo $n > rounds.txt; mkdir -p .git/objects .git/refs; "
    "[ -f .git/HEAD ] || echo 'ref: refs/heads/main' > .git/HEAD; "
    'printf "[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = %s/evil.sh\\n" "$HOSTWS" > .git/config.t '
    "2>/dev/null; mv -f .git/config.t .git/config 2>/dev/null; done"
)


def _rounds(ws: Path) -> int:
    """The loop's count (read again while the loop has not started or has the file truncated)."""
    for _ in range(5000):
        try:
            text = (ws / "rounds.txt").read_text().strip()
        except FileNotFoundError:  # not started yet
            text = ""
        if text.isdigit():
            return int(text)
        time.sleep(0.001)
    raise AssertionError("the loop stopped counting")


async def _race(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str | DockerConfig) -> None:
    home, ws, out = tmp_path / "home", tmp_path / "ws", tmp_path / "out"
    for d in (home / ".shellrt", ws, out):
        d.mkdir(parents=True)
    os.chmod(tmp_path, 0o755)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SHELLRT_MANAGED_SETTINGS", str(tmp_path / "managed.json"))
    hook = home / "hook.sh"  # the operator's: outside the workspace, runs git in the project
    hook.write_text(
        f'#!/bin/sh\necho run >> {home}/ran.log\ncd "$CLAUDE_PROJECT_DIR" && git status --short >/dev/null 2>&1\nexit 0\n'
    )
    os.chmod(hook, 0o755)
    settings = {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": str(hook)}]}]}}
    (home / ".shellrt" / "settings.json").write_text(json.dumps(settings))
    (ws / "evil.sh").write_text(f"#!/bin/sh\nid > {out}/PWNED\n")
    os.chmod(ws / "evil.sh", 0o755)
    (ws / "plant.sh").write_text(f"HOSTWS={ws}\n{_LOOP}")
    async with shellrt.Runtime(ws, backend, session_dir=tmp_path / "s", mode="bypassPermissions") as rt:
        started = await one_call(rt, "Bash", command="sh plant.sh", run_in_background=True)
        assert not started.get("is_error"), block_text(started)
        deadline = time.monotonic() + 10
        while not (ws / "rounds.txt").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        for _ in range(8):
            block = await one_call(rt, "Bash", command="true")
            assert not (out / "PWNED").exists(), (out / "PWNED").read_text()
            assert not block.get("is_error"), block_text(block)
        ran = (home / "ran.log").read_text().count("run")
        assert ran == 9, ran  # the hook ran at each call (the task's own too), with the task paused
        before = _rounds(ws)
        time.sleep(0.3)  # the task goes on after the hooks
        assert _rounds(ws) > before
    assert not (out / "PWNED").exists()


async def test_a_looping_plant_never_reaches_a_hook_bwrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Failed before: the hook's git ran the task's fsmonitor on the host at the first call."""
    require_bwrap()
    await _race(tmp_path, monkeypatch, "bwrap")


async def test_a_looping_plant_never_reaches_a_hook_docker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Failed before (bind mode: the container's root writes the host's workspace)."""
    require_docker()
    await _race(tmp_path, monkeypatch, DockerConfig(image=DEBIAN, workspace_mode="bind"))


async def test_overlapping_hooks_keep_the_task_paused_bwrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two read-only calls run together, each with its hook: the quick hook's end must not let the
    task run under the slow one's ``git`` (failed before the pauses were shared)."""
    require_bwrap()
    home, ws, out = tmp_path / "home", tmp_path / "ws", tmp_path / "out"
    for d in (home / ".shellrt", ws, out):
        d.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SHELLRT_MANAGED_SETTINGS", str(tmp_path / "managed.json"))
    hook = home / "hook.sh"
    hook.write_text(
        "#!/bin/sh\nif grep -q slow; then sleep 1; fi\n"
        'cd "$CLAUDE_PROJECT_DIR" && git status --short >/dev/null 2>&1\nexit 0\n'
    )
    os.chmod(hook, 0o755)
    settings = {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": str(hook)}]}]}}
    (home / ".shellrt" / "settings.json").write_text(json.dumps(settings))
    (ws / "evil.sh").write_text(f"#!/bin/sh\nid > {out}/PWNED\n")
    os.chmod(ws / "evil.sh", 0o755)
    (ws / "plant.sh").write_text(f"HOSTWS={ws}\n{_LOOP}")
    (ws / "a.txt").write_text("a\n")
    async with shellrt.Runtime(ws, "bwrap", session_dir=tmp_path / "s", mode="bypassPermissions") as rt:
        started = await one_call(rt, "Bash", command="sh plant.sh", run_in_background=True)
        assert not started.get("is_error"), block_text(started)
        _rounds(ws)
        for round_ in range(2):
            uses = [
                {"type": "tool_use", "id": f"q{round_}", "name": "Bash", "input": {"command": "cat a.txt"}},
                {"type": "tool_use", "id": f"s{round_}", "name": "Bash", "input": {"command": "cat a.txt # slow"}},
            ]
            reply = await rt.run({"role": "assistant", "content": uses})
            assert all(not block.get("is_error") for block in reply["content"]), reply
            assert not (out / "PWNED").exists(), (out / "PWNED").read_text()
    assert not (out / "PWNED").exists()


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(
        __file__,
        "test_a_looping_plant_never_reaches_a_hook_bwrap",
        "test_overlapping_hooks_keep_the_task_paused_bwrap",
    )
