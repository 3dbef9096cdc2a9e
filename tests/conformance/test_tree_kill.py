"""Conformance: timeouts, interrupts and cancellation kill the whole tree, on every backend."""

from __future__ import annotations

import time

import anyio
import psutil
import pytest

from sandbox._proctree import is_alive
from shellrt.supervisor import Supervisor

pytestmark = pytest.mark.anyio

ESCAPING = "sleep 1001 & setsid sleep 1002 & nohup sleep 1003 & (sleep 1004 &); sleep 1005"
SLEEPS = {f"100{i}" for i in range(1, 6)}


def sleeper_pids() -> set[int]:
    """Host pids of the ``sleep 100N`` processes of the escaping command."""
    found: set[int] = set()
    for proc in psutil.process_iter(["cmdline"]):
        cmd = proc.info["cmdline"] or []
        if len(cmd) == 2 and cmd[0].endswith("sleep") and cmd[1] in SLEEPS:
            found.add(proc.pid)
    return found


@pytest.mark.serial  # counts every `sleep 100N` on the machine; other suites run such sleeps too
async def test_timeout_kills_setsid_nohup_and_double_forked_children(sup: Supervisor) -> None:
    seen: set[int] = set()

    async def watch() -> None:
        await anyio.sleep(1.0)
        seen.update(sleeper_pids())

    start = time.monotonic()
    async with anyio.create_task_group() as tg:
        tg.start_soon(watch)
        result = await sup.run(ESCAPING, timeout_s=2)
    elapsed = time.monotonic() - start
    assert result.timed_out and result.exit_code is not None
    assert elapsed < 10, f"took {elapsed:.2f}s"  # the sleeps run ~1000 s: only a hang fails this
    assert len(seen) == 5, f"expected the 5 sleeps running, saw {seen}"
    survivors = [pid for pid in seen if is_alive(pid)]
    assert not survivors, f"survived the timeout: {survivors}"


async def test_timeout_is_enforced_within_a_second(sup: Supervisor) -> None:
    start = time.monotonic()
    result = await sup.run("sleep 30", timeout_s=0.5)
    assert result.timed_out
    assert time.monotonic() - start < 10  # not the 30 s of the sleep


async def test_output_before_timeout_is_kept(sup: Supervisor) -> None:
    result = await sup.run("echo before; sleep 30", timeout_s=0.5)
    assert result.timed_out and result.preview == "before\n"
    assert result.output_path.read_bytes() == b"before\n"


async def test_abort_event_interrupts_and_kills(sup: Supervisor) -> None:
    abort = anyio.Event()

    async def fire() -> None:
        await anyio.sleep(0.3)
        abort.set()

    start = time.monotonic()
    async with anyio.create_task_group() as tg:
        tg.start_soon(fire)
        result = await sup.run("sleep 1006 & sleep 30", timeout_s=30, abort=abort)
    assert result.interrupted and not result.timed_out
    assert time.monotonic() - start < 10  # not the 30 s of the sleep


async def test_cancel_scope_kills_the_tree(sup: Supervisor) -> None:
    start = time.monotonic()
    with anyio.move_on_after(0.3):
        await sup.run("sleep 1007 & sleep 30", timeout_s=30)
    assert time.monotonic() - start < 10  # not the 30 s of the sleep
    # no_leftovers asserts the tree is gone
