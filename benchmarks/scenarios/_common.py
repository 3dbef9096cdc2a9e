"""Helpers shared by the scenarios: run configuration, starting systems, skipped rows."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass

import psutil

from benchmarks._harness import Column, Row, Samples, Table
from benchmarks.peers import System, SystemUnavailable, make

__all__ = ["RunConfig", "burst_table", "kill_pids", "open_systems", "sampled_rows", "sleepers"]


@dataclass(frozen=True)
class RunConfig:
    """How hard to try: ``quick`` trims repetitions and sizes (the tables say so)."""

    quick: bool = False

    def reps(self, quick: int, full: int) -> int:
        return quick if self.quick else full


def burst_table(
    name: str, title: str, *, per_call: str = "ms / call", ms: dict[str, str], ratios: dict[str, str], digits: int = 2
) -> Table:
    """A table of alternating bursts (`benchmarks._bursts`): the time per call with its spread, then
    further times in ms (``ms``: key -> label) and ratios shown as ``1.23x`` (``ratios``), each one
    figure per system (a median over the rounds: no spread)."""
    return Table(
        name=name,
        title=title,
        columns=[
            Column("per_call_s", per_call, scale=1000.0),
            *(Column(key, label, scale=1000.0, spread=False) for key, label in ms.items()),
            *(Column(key, label, fmt=f"{{:.{digits}f}}x", spread=False) for key, label in ratios.items()),
        ],
    )


async def open_systems(ids: Sequence[str], stack: AsyncExitStack) -> tuple[dict[str, System], dict[str, Row]]:
    """Start every system it can; the others come back as skipped/failed rows (never raise)."""
    started: dict[str, System] = {}
    unusable: dict[str, Row] = {}
    for system_id in ids:
        system = make(system_id)
        reason = system.unavailable()
        if reason:
            unusable[system_id] = Row(system.name, status="skipped", note=reason)
            continue
        try:
            started[system_id] = await stack.enter_async_context(system)
        except SystemUnavailable as exc:
            unusable[system_id] = Row(system.name, status="skipped", note=str(exc))
        except Exception as exc:
            unusable[system_id] = Row(system.name, status="failed", note=f"{type(exc).__name__}: {exc}")
    return started, unusable


def sampled_rows(
    ids: Sequence[str],
    started: dict[str, System],
    unusable: dict[str, Row],
    samples: Samples,
    measured: Callable[[str, System, list[float]], Row],
) -> Iterator[tuple[str, Row]]:
    """One row per system, in ``ids`` order: its skipped/failed row, or ``measured``'s.

    A system that raised during the run, or was never measured, gets a failed row.
    """
    for system_id in ids:
        if system_id in unusable:
            yield system_id, unusable[system_id]
        elif system_id in samples.errors or not samples.values[system_id]:
            err = samples.errors.get(system_id, "no measurement")
            yield system_id, Row(started[system_id].name, status="failed", note=err)
        else:
            yield system_id, measured(system_id, started[system_id], samples.values[system_id])


def sleepers(args: Sequence[str]) -> list[psutil.Process]:
    """Live processes whose command line is exactly ``sleep <one of args>`` (zombies excluded)."""
    wanted = set(args)
    found: list[psutil.Process] = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        try:
            cmd = proc.info["cmdline"] or []
            if proc.info["status"] == psutil.STATUS_ZOMBIE:
                continue
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if len(cmd) == 2 and os.path.basename(cmd[0]) == "sleep" and cmd[1] in wanted:
            found.append(proc)
    return found


def kill_pids(procs: Sequence[psutil.Process]) -> None:
    """SIGKILL exactly these processes (by pid, checked against their create time)."""
    for proc in procs:
        try:
            if proc.is_running():
                proc.send_signal(signal.SIGKILL)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
