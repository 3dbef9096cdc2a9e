"""Red team, round 39 (hooks2): a hook that waits on something a paused command provides.

While a hook runs on the host, the session's running commands and background tasks are stopped
(`shellrt.supervisor._host_pause`). A hook that reads a FIFO a background task feeds (or asks a
server a task runs) waits until its own timeout, and a command started meanwhile waits as long.
That wait cannot be shortened without letting the task run under the hook; what was missing is
the reason: the notice said only "timed out", so the operator had nothing to act on.
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


async def _fifo_hook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: object) -> tuple[str, float]:
    """A task feeding a FIFO; a call whose hook reads it (timeout 2 s). The call's result text and
    how long the call took."""
    home, ws = tmp_path / "home", tmp_path / "ws"
    for d in (home / ".shellrt", ws):
        d.mkdir(parents=True)
    os.chmod(tmp_path, 0o755)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SHELLRT_MANAGED_SETTINGS", str(tmp_path / "managed.json"))
    hook = home / "hook.sh"  # the operator's: reads what the project's server (a task) writes
    hook.write_text(f'#!/bin/sh\ncat >/dev/null\n[ -p "{ws}/feed" ] || exit 0\nread line < "{ws}/feed"\nexit 0\n')
    os.chmod(hook, 0o755)
    spec = {"type": "command", "command": str(hook), "timeout": 2}
    settings = {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [spec]}]}}
    (home / ".shellrt" / "settings.json").write_text(json.dumps(settings))
    async with shellrt.Runtime(ws, backend, session_dir=tmp_path / "s", mode="bypassPermissions") as rt:  # type: ignore[arg-type]
        feed = "mkfifo feed.t && mv feed.t feed && while :; do echo ok > feed; done"
        started = await one_call(rt, "Bash", command=feed, run_in_background=True)
        assert not started.get("is_error"), block_text(started)
        deadline = time.monotonic() + 10
        while not (ws / "feed").exists():
            assert time.monotonic() < deadline, "the task made no FIFO"
            time.sleep(0.01)
        began = time.monotonic()
        block = await one_call(rt, "Bash", command="echo ran")
        took = time.monotonic() - began
        return block_text(block), took


def _says_why(text: str) -> bool:
    return "paused" in text and "TaskStop" in text


async def test_a_hook_waiting_on_a_paused_task_says_why_bwrap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Failed before: the hook timed out (2 s) with "timed out ... ignored" and no reason."""
    require_bwrap()
    text, took = await _fifo_hook(tmp_path, monkeypatch, "bwrap")
    seen = text + capsys.readouterr().err
    assert took >= 1.9, took  # it waits for its timeout: the task that feeds it is stopped
    assert "timed out" in seen, seen
    assert _says_why(seen), seen


async def test_a_hook_waiting_on_a_paused_task_says_why_docker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    require_docker()
    text, took = await _fifo_hook(tmp_path, monkeypatch, DockerConfig(image=DEBIAN, workspace_mode="bind"))
    seen = text + capsys.readouterr().err
    assert took >= 1.9, took
    assert _says_why(seen), seen


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(__file__, "test_a_hook_waiting_on_a_paused_task_says_why_bwrap")
