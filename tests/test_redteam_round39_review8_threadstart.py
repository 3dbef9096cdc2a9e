"""Red team, round 39 (review8): a session of another thread that starts a command under a hook.

hooks2 refused a hook's pause while a session of another thread on an overlapping workspace ran
anything (`_host_pause.busy_elsewhere`), but checked once, when the pause began: a session idle
then started a command a moment later, and it ran for the whole hook, unpaused, while the pause had
said all were still. Same-thread starts wait for the hook's end (round 38); another thread's did not.
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
    ws: Path, session_dir: Path, ready: threading.Event, go: threading.Event, done: threading.Event
) -> threading.Thread:
    """A session on ``ws`` in a thread of its own, idle until ``go``, then running a plant."""

    async def main() -> None:
        backend = BwrapBackend(BwrapConfig(), SandboxPolicy(workspace=ws))
        async with supervised(backend, session_dir) as sup:
            await sup.run("true", timeout_s=30)  # registered, nothing left running
            ready.set()
            while not go.is_set():
                await anyio.sleep(0.005)
            await sup.run("echo pwned > planted", timeout_s=60)
            while not done.is_set():
                await anyio.sleep(0.02)

    thread = threading.Thread(target=anyio.run, args=(main,), daemon=True)
    thread.start()
    return thread


async def test_a_start_of_another_thread_waits_for_the_hook(tmp_path: Path) -> None:
    """Failed before: the other thread's command wrote ``planted`` while the hook held the pause."""
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    ready, go, done = threading.Event(), threading.Event(), threading.Event()
    thread = _other_thread(ws, tmp_path / "s-other", ready, go, done)
    planted = ws / "planted"
    try:
        with anyio.fail_after(30):
            while not ready.is_set():
                assert thread.is_alive(), "the other thread's session ended"
                await anyio.sleep(0.02)
        backend = BwrapBackend(BwrapConfig(), SandboxPolicy(workspace=ws))
        async with supervised(backend, tmp_path / "s") as sup:
            await sup.run("true", timeout_s=30)
            async with sup.quiet_for_host() as failure:
                assert failure is None, failure  # the other session was idle: the hook runs
                go.set()
                await anyio.sleep(1.5)  # the hook: the other thread's command must not run now
                assert not planted.exists(), "another thread's command ran under the hook"
            with anyio.fail_after(30):  # and it runs once the hook ended
                while not planted.exists():
                    await anyio.sleep(0.02)
    finally:
        go.set()
        done.set()
        await anyio.to_thread.run_sync(thread.join, 30)


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(__file__, "test_a_start_of_another_thread_waits_for_the_hook")
