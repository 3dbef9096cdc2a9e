"""Red team, round 38 (review3): processes the host pause's thread check reads wrongly.

Round 38 (hooks) judged a process still only when every thread under ``/proc/<pid>/task`` is.
These attack the states around that: a process whose main thread has exited (its leader a zombie,
``Z`` in ``/proc/<pid>/stat``) while a second thread runs on, and a process with thousands of
threads (what the check costs).
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.bwrap import BwrapBackend
from tests import _nonroot
from tests._bwrap_session import require_bwrap, supervised
from tests._timing import cpu_seconds

pytestmark = pytest.mark.anyio

#: Thread 2 counts into ``c.cnt``; the main thread leaves (``pthread_exit``): the leader is a zombie.
_ZOMBIE_LEADER = r"""
import ctypes, os, threading
def count():
    fd = os.open("c.cnt", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    while True:
        os.write(fd, b"x")
threading.Thread(target=count).start()
ctypes.CDLL(None).pthread_exit(None)
"""

#: ``$N`` threads that sleep, and one that counts into ``c.cnt``.
_MANY = r"""
import os, sys, threading, time
threading.stack_size(64 << 10)
for _ in range(int(sys.argv[1])):
    threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()
def count():
    fd = os.open("c.cnt", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    while True:
        os.write(fd, b"x")
threading.Thread(target=count, daemon=True).start()
time.sleep(3600)
"""


#: A child stopped by itself (its parent counts as "waiting for a stopped child", round 37's vfork
#: rule) and its main thread writing 256 MiB of ``a`` then of ``b`` with ``O_DIRECT``: in ``D`` while the
#: disk takes it, and the data lands after the pause said all were still.
_DIRECT = r"""
import mmap, os, signal
if os.fork() == 0:
    os.kill(os.getpid(), signal.SIGSTOP)
    os._exit(0)
size = 256 << 20
bufs = []
for byte in (b"a", b"b"):
    buf = mmap.mmap(-1, size)
    buf.write(byte * size)
    bufs.append(buf)
fd = os.open("big", os.O_WRONLY | os.O_CREAT | os.O_DIRECT)
os.pwrite(fd, bufs[0], 0)
open("ready", "w").close()
i = 1
while True:
    os.pwrite(fd, bufs[i % 2], 0)
    i += 1
"""


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


async def _held(sup: object, ws: Path, pauses: int) -> list[float]:
    """Pause ``pauses`` times; the counter must not move under any; the CPU seconds this process
    (the pause runs in one of its threads) spent entering each pause."""
    from shellrt.supervisor import Supervisor

    assert isinstance(sup, Supervisor)
    took = []
    moved = 0
    for _ in range(pauses):
        begun = cpu_seconds()
        async with sup.quiet_for_host() as failure:
            took.append(cpu_seconds() - begun)
            assert failure is None, failure
            before = _size(ws / "c.cnt")
            await anyio.sleep(0.3)
            moved += _size(ws / "c.cnt") != before
        await anyio.sleep(0.1)
        assert _size(ws / "c.cnt") > 0
    assert moved == 0, f"a thread wrote under {moved} of {pauses} pauses"
    return took


async def test_a_process_whose_main_thread_left_is_stopped(tmp_path: Path) -> None:
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "z.py").write_text(_ZOMBIE_LEADER)
    backend = BwrapBackend(BwrapConfig(), SandboxPolicy(workspace=ws))
    async with supervised(backend, tmp_path / "session") as sup:
        await sup.start_background("python3 z.py")
        with anyio.fail_after(20):
            while _size(ws / "c.cnt") < 1000:
                await anyio.sleep(0.05)
        await _held(sup, ws, 4)


async def test_a_process_with_thousands_of_threads_is_paused_in_bounded_time(tmp_path: Path) -> None:
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "m.py").write_text(_MANY)
    backend = BwrapBackend(BwrapConfig(), SandboxPolicy(workspace=ws))
    async with supervised(backend, tmp_path / "session") as sup:
        await sup.start_background("python3 m.py 3000")
        with anyio.fail_after(60):
            while _size(ws / "c.cnt") < 1000:
                await anyio.sleep(0.05)
        took = await _held(sup, ws, 3)
        print("pause of 3000 threads, CPU s:", [round(t, 3) for t in took])
        # The check's cost, in CPU seconds (tests/_timing): a wall bound of 3 s counted the time the
        # pause waited for a core (57-68 ms wall at load 6; CI's lane runs at load 15-30). Its wall
        # time is the product's own promise: the settle pass refuses after 2 s (failure above).
        # Measured idle: 0.11-0.14 CPU s a pause; a check quadratic in the threads (a task listing
        # a thread, 9 M stat reads) costs minutes.
        assert max(took) < 3.0, took


def _tail(path: Path) -> bytes:
    with path.open("rb") as f:
        f.seek((256 << 20) - 1)
        return f.read(1)


async def test_a_thread_in_d_beside_a_stopped_child_is_waited_for(tmp_path: Path) -> None:
    """Failed before: a thread in ``D`` counted as still whenever its process had a stopped child
    (meant for the vfork wait only), so a direct write waiting on the disk landed after the pause."""
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "d.py").write_text(_DIRECT)
    backend = BwrapBackend(BwrapConfig(), SandboxPolicy(workspace=ws))
    async with supervised(backend, tmp_path / "session") as sup:
        await sup.start_background("python3 d.py")
        with anyio.fail_after(30):
            while not (ws / "ready").exists() or _size(ws / "big") < 256 << 20:
                await anyio.sleep(0.05)
        moved = 0
        for _ in range(8):
            async with sup.quiet_for_host() as failure:
                assert failure is None, failure
                before = _tail(ws / "big")
                await anyio.sleep(0.5)
                moved += _tail(ws / "big") != before
            await anyio.sleep(0.1)
        assert moved == 0, f"a direct write landed under {moved} of 8 pauses"


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(
        __file__,
        "test_a_process_whose_main_thread_left_is_stopped",
        "test_a_process_with_thousands_of_threads_is_paused_in_bounded_time",
        "test_a_thread_in_d_beside_a_stopped_child_is_waited_for",
    )
