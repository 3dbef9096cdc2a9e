"""Conformance: a foreground command ends when its shell exits; what it left running dies then.

Every backend agrees (docs/faults.md, "A command's end"): processes a command
started and left behind holding its output are killed when its shell exits, so a result never reports an exit next to processes still running, and a
fork loop under a timeout returns within the timeout and a bounded grace.
"""

from __future__ import annotations

import time

import anyio
import psutil
import pytest

from sandbox._proctree import is_alive
from shellrt.supervisor import Supervisor

pytestmark = pytest.mark.anyio

# Leftovers that still hold the command's output (the ones a result could lie about).
LEFTOVERS = "(sleep 1011 &); sleep 1013 & exit 0"
SLEEPS = {"1011", "1013"}


def sleeper_pids(names: set[str]) -> set[int]:
    found: set[int] = set()
    for proc in psutil.process_iter(["cmdline"]):
        cmd = proc.info["cmdline"] or []
        if len(cmd) == 2 and cmd[0].endswith("sleep") and cmd[1] in names:
            found.add(proc.pid)
    return found


async def _gone(names: set[str], within_s: float) -> set[int]:
    deadline = time.monotonic() + within_s
    left = sleeper_pids(names)
    while left and time.monotonic() < deadline:
        await anyio.sleep(0.05)
        left = {p for p in left if is_alive(p)}
    return left


@pytest.mark.serial  # looks for every `sleep 1011`/`sleep 1013` on the machine (test_tasks runs them too)
async def test_an_exited_command_leaves_nothing_running(sup: Supervisor) -> None:
    start = time.monotonic()
    result = await sup.run(LEFTOVERS, timeout_s=30)
    elapsed = time.monotonic() - start
    assert not result.timed_out and result.exit_code == 0
    assert elapsed < 20, f"took {elapsed:.2f}s: the leftovers were waited for, not killed"
    # Checked before the session closes (closing kills everything anyway).
    left = await _gone(SLEEPS, within_s=3.0)
    assert not left, f"still running after the command was reported done: {left}"


async def test_fork_loop_under_a_timeout_returns_promptly_and_leaves_nothing(sup: Supervisor) -> None:
    start = time.monotonic()
    result = await sup.run("for i in $(seq 400); do (sleep 1014 &) ; done; exit 0", timeout_s=3)
    elapsed = time.monotonic() - start
    # Bounded: timeout + the drain/kill grace, with room for a loaded 2-core machine.
    assert elapsed < 3 + 15, f"took {elapsed:.2f}s"
    assert not (result.exit_code == 0 and result.timed_out)
    left = await _gone({"1014"}, within_s=3.0)
    assert not left, f"exit {result.exit_code} reported while {len(left)} processes still ran"
