"""Red team, round 39 (hooks2): a live session of another thread of this process under a hook.

A hook's pause (`shellrt.supervisor._host_pause`) stops the sessions of its own thread whose
writable roots overlap its own (round 38 review3); a session on another thread (a harness running
one event loop per agent) was left running, and the pause said all were still: its background task
rewrote the workspace under the hook. Such a session cannot be paused from here (a pause's events
and its shared stops belong to one event loop), so while one of them runs commands the pause is
refused: guard hooks block the call, post hooks are reported not run.
"""

from __future__ import annotations

import threading
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.bwrap import BwrapBackend
from tests import _nonroot
from tests._bwrap_session import require_bwrap, supervised

pytestmark = pytest.mark.anyio


def _other_thread(
    ws: Path, session_dir: Path, command: str | None, ready: threading.Event, done: threading.Event
) -> threading.Thread:
    """A session on ``ws`` in a thread of its own (its own event loop), running ``command`` as a task."""

    async def main() -> None:
        backend = BwrapBackend(BwrapConfig(), SandboxPolicy(workspace=ws))
        async with supervised(backend, session_dir) as sup:
            if command is not None:
                await sup.start_background(command)
                with anyio.fail_after(10):
                    while not (ws / "c.cnt").exists():
                        await anyio.sleep(0.01)
            else:
                await sup.run("true", timeout_s=30)  # registered, nothing left running
            ready.set()
            while not done.is_set():
                await anyio.sleep(0.02)

    thread = threading.Thread(target=anyio.run, args=(main,), daemon=True)
    thread.start()
    return thread


async def _hook_beside(tmp_path: Path, command: str | None) -> tuple[str | None, int]:
    """The pause's answer for a hook of this thread while another thread's session runs
    ``command``, and how many bytes that session's counter grew under the hook."""
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    ready, done = threading.Event(), threading.Event()
    thread = _other_thread(ws, tmp_path / "s-other", command, ready, done)
    try:
        with anyio.fail_after(30):
            while not ready.is_set():
                assert thread.is_alive(), "the other thread's session ended"
                await anyio.sleep(0.02)
        backend = BwrapBackend(BwrapConfig(), SandboxPolicy(workspace=ws))
        async with supervised(backend, tmp_path / "s") as sup:
            await sup.start_background("sleep 300")
            async with sup.quiet_for_host() as failure:
                counter = ws / "c.cnt"
                before = counter.stat().st_size if counter.exists() else 0
                await anyio.sleep(0.4)
                grew = (counter.stat().st_size if counter.exists() else 0) - before
            return failure, grew
    finally:
        done.set()
        await anyio.to_thread.run_sync(thread.join, 30)


async def test_a_busy_session_of_another_thread_refuses_the_pause(tmp_path: Path) -> None:
    """Failed before: the pause said all were still (None) while the other thread's task counted on."""
    failure, grew = await _hook_beside(tmp_path, "n=0; while :; do n=$((n+1)); echo $n >> c.cnt; done")
    assert failure is not None, (
        f"the pause said all were still; the other thread's task wrote {grew} bytes under it"
    )
    assert "another thread" in failure, failure


async def test_an_idle_session_of_another_thread_does_not(tmp_path: Path) -> None:
    """Nothing running there: nothing to pause, the hook runs."""
    failure, _ = await _hook_beside(tmp_path, None)
    assert failure is None, failure


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(
        __file__,
        "test_a_busy_session_of_another_thread_refuses_the_pause",
        "test_an_idle_session_of_another_thread_does_not",
    )
