"""Red team round 11: a Runtime its owner drops without closing must not leave its background
tasks running.

A host program that makes a Runtime per conversation and forgets it (no ``aclose``, an exception
path that skips ``async with``) left every ``run_in_background`` task of it running for as long
as the program lived: a model could start ``sleep infinity``-like work (a miner, a listener) that
outlived the conversation. Measured on the old code with the local backend: the dropped Runtime's
background ``sleep`` was still running after the Runtime was collected and its event loop closed.
A collected (or, at exit, unclosed) Runtime now kills the process trees of its background tasks.
Real child Python processes, real sandboxes.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests._bwrap_session import require_bwrap
from tests._mcp_support import ROOT
from tests._proc_words import live_pids

_CHILD = textwrap.dedent(
    """
    import asyncio, gc, os, sys, time
    import shellrt

    ws, sandbox, token, how = sys.argv[1:5]

    command = f"exec -a shellrt-bg-{token} sleep 300"
    if how == "escape":  # leaves its group and its tree (re-parented), keeps running
        command = f"setsid -f sh -c 'exec -a shellrt-bg-{token} sleep 300'; exec sleep 301"

    async def start():
        rt = shellrt.Runtime(ws, sandbox, session_dir=os.path.join(os.path.dirname(ws), "s-" + token),
                             mode="bypassPermissions")
        await rt.start()
        block = {"type": "tool_use", "id": "bg1", "name": "Bash",
                 "input": {"command": command, "run_in_background": True}}
        out = await rt.run([block])
        assert not out["content"][0].get("is_error"), out
        await asyncio.sleep(0.5)
        print("started", flush=True)
        return rt

    async def dropped():
        await start()  # the Runtime is dropped here, never closed
        gc.collect()
        await asyncio.sleep(0.5)
        print("dropped", flush=True)
        sys.stdin.readline()  # alive until the test has looked

    if how == "exit":
        asyncio.run(start())  # returns with the Runtime unclosed: the program exits
    else:  # drop, escape
        asyncio.run(dropped())
    """
)


def _running(token: str) -> list[int]:
    """Pids of the background ``sleep`` (its argv[0] carries ``token``), zombies excluded."""
    return live_pids(lambda argv: argv[0] == f"shellrt-bg-{token}".encode())


def _gone(token: str, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while _running(token):
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True


def _child(tmp_path: Path, sandbox: str, how: str) -> tuple[subprocess.Popen[str], str]:
    token = secrets.token_hex(5)
    ws = tmp_path / "ws"
    ws.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    script = tmp_path / "child.py"
    script.write_text(_CHILD)
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": str(ROOT), "SHELLRT_HOME": str(home / ".shellrt")}
    proc = subprocess.Popen(
        [sys.executable, str(script), str(ws), sandbox, token, how],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    return proc, token


@pytest.mark.parametrize("sandbox", ["local", "bwrap"])
def test_a_dropped_runtime_kills_its_background_tasks(tmp_path: Path, sandbox: str) -> None:
    """Failed on the old code with ``local`` (the sleep ran on while its owner lived)."""
    if sandbox == "bwrap":
        require_bwrap()
    proc, token = _child(tmp_path, sandbox, "drop")
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "started"
        assert proc.stdout.readline().strip() == "dropped"
        assert proc.poll() is None  # the owner lives on
        assert _gone(token, 5.0), f"the dropped Runtime's background task still runs: {_running(token)}"
    finally:
        proc.communicate("\n", timeout=30)
        for pid in _running(token):
            os.kill(pid, 9)


@pytest.mark.parametrize("sandbox", ["local", "bwrap"])
def test_an_owner_exiting_without_close_leaves_no_background_task(tmp_path: Path, sandbox: str) -> None:
    if sandbox == "bwrap":
        require_bwrap()
    proc, token = _child(tmp_path, sandbox, "exit")
    try:
        out, _ = proc.communicate(timeout=60)
        assert "started" in out
        assert _gone(token, 5.0), (
            f"a background task outlived its unclosed Runtime's owner: {_running(token)}"
        )
    finally:
        for pid in _running(token):
            os.kill(pid, 9)


def test_a_dropped_local_runtime_kills_what_left_the_tree_too(tmp_path: Path) -> None:
    """``setsid -f``: a new session, re-parented away from the task's root. Passed before the
    marker sweep was added too (the session's subreaper, collected with the Runtime, ends what it
    adopted); the run marker covers a local backend without one."""
    proc, token = _child(tmp_path, "local", "escape")
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "started"
        assert proc.stdout.readline().strip() == "dropped"
        assert _gone(token, 5.0), f"what the dropped Runtime's task detached still runs: {_running(token)}"
    finally:
        proc.communicate("\n", timeout=30)
        for pid in _running(token):
            os.kill(pid, 9)
