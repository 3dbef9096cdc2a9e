"""Red team, round 38 (hooks): a thread of a paused process wrote on after the pause said all were still.

The host pause (round 37) judged a process still by ``/proc/<pid>/stat``, its main thread's state.
A process whose main thread sleeps (stopped at once) and whose second thread is inside a long
``write`` kept writing: the pause returned, the sweep and the hook would run, and the write landed
after them. Now every thread of a stopped process must be seen stopped.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.bwrap import BwrapBackend
from tests import _nonroot
from tests._bwrap_session import require_bwrap, supervised

pytestmark = pytest.mark.anyio

#: Thread 2 writes 128 MiB of ``a`` then of ``b`` over the file, again and again; the main thread sleeps.
_WRITER = r"""
import os, threading, time
size = 128 << 20
bufs = [b"a" * size, b"b" * size]
def write():
    fd = os.open("big", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    i = 0
    while True:
        os.pwrite(fd, bufs[i % 2], 0)
        i += 1
threading.Thread(target=write, daemon=True).start()
open("ready", "w").close()
while True:
    time.sleep(0.001)
"""


def _tail(path: Path) -> bytes:
    with path.open("rb") as f:
        f.seek((128 << 20) - 1)
        return f.read(1)


async def test_a_thread_mid_write_is_stopped_before_the_pause_ends(tmp_path: Path) -> None:
    """Failed before: the file's end changed after the pause returned in most pauses."""
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "w.py").write_text(_WRITER)
    backend = BwrapBackend(BwrapConfig(), SandboxPolicy(workspace=ws))
    async with supervised(backend, tmp_path / "session") as sup:
        await sup.start_background("python3 w.py")
        with anyio.fail_after(20):
            # "ready" may come before the writer thread made "big" (round 50 saw it missing, load ~20).
            while not (ws / "ready").exists() or not (ws / "big").exists() or (ws / "big").stat().st_size < 128 << 20:
                await anyio.sleep(0.05)
        moved = 0
        for _ in range(6):
            async with sup.quiet_for_host() as failure:
                assert failure is None, failure
                before = _tail(ws / "big")
                await anyio.sleep(0.3)
                moved += _tail(ws / "big") != before
            await anyio.sleep(0.1)
        assert moved == 0, f"a thread wrote under {moved} of 6 pauses"


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(__file__, "test_a_thread_mid_write_is_stopped_before_the_pause_ends")
