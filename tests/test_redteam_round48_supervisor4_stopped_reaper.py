"""Red team, round 48 (supervisor4): a command that stopped the session's reaper stalled the session.

Without a session cgroup (a non-root caller) every local command is the child of the session's
reaper process (`sandbox._reaper`), which answers each start and sweeps what commands leave. A
command of the same uid may stop it (``kill -STOP $PPID``): the next command's start then waited
out the reply timeout (15 s) and the close of the stopped reaper (5 s) before a new one ran it,
and the session's close waited 5 s more and then SIGKILLed the stopped reaper without its sweep
(what it had adopted went to init). The owner now continues a reaper that does not answer.
"""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest

from sandbox import SandboxPolicy
from sandbox.config import LocalConfig
from sandbox.local import LocalBackend
from shellrt.supervisor import Supervisor

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _state(pid: int) -> str:
    raw = Path(f"/proc/{pid}/stat").read_bytes()
    return raw[raw.rfind(b")") + 2 :].split()[0].decode()


async def test_a_stopped_reaper_is_continued(tmp_path: Path) -> None:
    """Failed before: the command after the stop took ~20 s to start, and the close beside a task that
    stopped it ~5 s (then the reaper was killed without its sweep)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    # No warm shell: its start after each command asks the reaper (and would continue it).
    backend = LocalBackend(LocalConfig(warm_shells=0), policy=SandboxPolicy(workspace=ws))
    backend.session_cgroup = False  # the reaper process, as for a caller without root
    await backend.start()
    try:
        sup = Supervisor(backend, session_dir=tmp_path / "s")
        async with sup:
            stopped = await sup.run("kill -STOP $PPID && echo stopped", timeout_s=30)
            assert stopped.preview == "stopped\n", stopped.preview
            began = time.monotonic()
            after = await sup.run("echo after", timeout_s=30)
            took = time.monotonic() - began
            assert after.exit_code == 0 and after.preview == "after\n", after.preview
            # ~20 s before (the docstring); round 49: 10 s, not 5 s, so a loaded lane's start is not it.
            assert took < 10.0, f"the command after the reaper's stop took {took:.1f} s"
            reaper = backend._runner.reaper
            assert reaper is not None
            # a task stops it while nothing of the owner waits on it: only the close meets it
            go = tmp_path / "go"
            await sup.start_background(
                f"while [ ! -e '{go}' ]; do sleep 0.01; done; kill -STOP $PPID; exec sleep 60"
            )
            go.touch()  # its start was answered: nothing of the owner asks the reaper from here
            deadline = time.monotonic() + 10
            while _state(reaper.pid) != "T":
                assert time.monotonic() < deadline, "the task did not stop the reaper"
                await anyio.sleep(0.01)
            closing = time.monotonic()
        closed = time.monotonic() - closing
    finally:
        began_close = time.monotonic()
        await backend.close()
        backend_closed = time.monotonic() - began_close
    assert closed + backend_closed < 4.0, (
        f"closing beside a stopped reaper took {closed + backend_closed:.1f} s"
    )
