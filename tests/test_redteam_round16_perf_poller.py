"""The local backend's descendant poller (issue 22, item 2; round 16).

1. It recorded nothing for a young command: its /proc snapshot skipped pids up to the lowest
   root's pid, the root's own row included, and `ProcessTree.record` finds descendants only through
   that row. Only a run older than the pid cycle (full scan: ~0.3 s at pid_max 32768, ~42 s at the
   usual 4194304) was recorded. Failed before: 3 of 3 (nothing recorded at 0.35 s).
2. It woke 10 times a second for the whole life of a session once its first slow command had run,
   idle or not. It now sleeps after a few empty rounds and a starting command wakes it.
   Failed before: the idle poller switched 5 times in 0.5 s (3 of 3).
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import anyio
import pytest

import sandbox._hostproc as hostproc
from sandbox import LocalConfig, SandboxPolicy
from sandbox.base import ExecRequest
from sandbox.factory import create_backend


@pytest.fixture(autouse=True)
def long_pid_cycle(monkeypatch: pytest.MonkeyPatch) -> None:
    """The usual host (pid_max 4194304): no run here outlives the pid cycle, as on most machines."""
    monkeypatch.setattr(hostproc, "_PID_CYCLE_S", 60.0)


def _poller(backend: object) -> threading.Thread:
    """This backend's poller thread (not another test's, in the same worker)."""
    thread = backend._runner._poller  # type: ignore[attr-defined]
    assert thread is not None and thread.is_alive(), "the descendant poller thread was not started"
    return thread


def _switches(thread: threading.Thread) -> int:
    with open(f"/proc/self/task/{thread.native_id}/status") as f:
        fields = dict(line.split(":\t", 1) for line in f.read().splitlines() if ":\t" in line)
    return int(fields["voluntary_ctxt_switches"]) + int(fields["nonvoluntary_ctxt_switches"])


def _request(command: str) -> ExecRequest:
    return ExecRequest(argv=("bash", "-c", command), cwd="/", env={"PATH": os.environ["PATH"]})


async def _run(backend: object, command: str, look_after_s: float = 0.0) -> set[int]:
    """Run ``command``; the descendants the poller had recorded ``look_after_s`` into it."""
    proc = await backend.exec(_request(command))  # type: ignore[attr-defined]
    seen: set[int] = set()
    async with anyio.create_task_group() as tg:
        tg.start_soon(proc.wait)
        if look_after_s:
            await anyio.sleep(look_after_s)
            seen = set(proc.tree._known)
    return seen


_TWO_CHILDREN = "sleep 0.6 & sleep 0.6; wait"


def test_a_young_commands_descendants_are_recorded(tmp_path: Path) -> None:
    async def main() -> set[int]:
        backend = create_backend(LocalConfig(warm_shells=0), SandboxPolicy(workspace=tmp_path))
        await backend.start()
        try:
            return await _run(backend, _TWO_CHILDREN, look_after_s=0.35)
        finally:
            await backend.close()

    recorded = anyio.run(main)
    assert len(recorded) >= 2, f"descendants of the running command not recorded: {recorded}"


def test_idle_poller_does_not_wake_and_a_new_command_is_still_polled(tmp_path: Path) -> None:
    async def main() -> tuple[int, set[int]]:
        backend = create_backend(LocalConfig(warm_shells=0), SandboxPolicy(workspace=tmp_path))
        await backend.start()
        try:
            await _run(backend, "sleep 0.25")  # still running at `wait`: the poller starts
            poller = _poller(backend)
            await anyio.sleep(0.8)  # past the idle rounds
            before = _switches(poller)
            time.sleep(0.5)
            woke = _switches(poller) - before
            # A command started after the idle spell wakes it: its descendants are recorded.
            recorded = await _run(backend, _TWO_CHILDREN, look_after_s=0.35)
            assert _poller(backend) is poller
            return woke, recorded
        finally:
            await backend.close()

    woke, recorded = anyio.run(main)
    assert woke == 0, f"the idle poller woke {woke} times in 0.5 s with no command running"
    assert len(recorded) >= 2, f"descendants of the running command not recorded: {recorded}"
