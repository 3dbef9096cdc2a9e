"""The floor: ``subprocess.run(["bash", "-c", command])`` with no supervision at all."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence

import anyio

from benchmarks.peers.base import Outcome, System

__all__ = ["RawBash"]


class RawBash(System):
    """A bare bash spawn per command, output captured in memory (what a quick script would do)."""

    name = "raw bash spawn"

    async def run(self, command: str, timeout_s: float) -> Outcome:
        return _run(command, timeout_s)

    async def run_many(self, commands: Sequence[str], timeout_s: float) -> list[Outcome]:
        results: list[Outcome | None] = [None] * len(commands)

        async def one(i: int, command: str) -> None:
            results[i] = await anyio.to_thread.run_sync(_run, command, timeout_s)

        async with anyio.create_task_group() as tg:
            for i, command in enumerate(commands):
                tg.start_soon(one, i, command)
        return [r for r in results if r is not None]


def _run(command: str, timeout_s: float) -> Outcome:
    try:
        proc = subprocess.run(["bash", "-c", command], capture_output=True, timeout=timeout_s)
    except subprocess.TimeoutExpired as exc:
        got = len(exc.stdout or b"")
        return Outcome(
            exit_code=None, timed_out=True, recoverable_bytes=got, note="bash killed, children not"
        )
    return Outcome(exit_code=proc.returncode, recoverable_bytes=len(proc.stdout) + len(proc.stderr))
