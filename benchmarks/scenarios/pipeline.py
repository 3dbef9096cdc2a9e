"""Scenario — issue 22, item 2: the full pipeline (Runtime + Bash tool, local) against a raw
``bash -c true`` spawn, in bursts that take turns, judged by wall time *and* CPU time.

Why its own table: the latency table's "x raw bash" divides medians taken over repetitions that
ran seconds apart (every other system runs between them), so on a shared machine it swung
0.94x-3.27x for the same code. Here raw and ours take turns in short bursts, round after round
(`benchmarks._bursts`), each round's ratio compares calls timed next to each other, and the
figure is the median of those ratios, with quartiles. CPU a call (this process plus the children
it reaped: the commands, when a session cgroup starts them as its children) is far less moved by
the load than wall time, so both are printed and the goal is judged by each.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack

from benchmarks._bursts import Bursts, alternating_bursts, raw_spawn
from benchmarks._harness import Row, Table, summarize
from benchmarks.peers import System
from benchmarks.scenarios._common import RunConfig, burst_table, open_systems

__all__ = ["GOAL", "run", "verdict_notes"]

#: Issue 22, item 2: the full pipeline at most this many times a raw spawn.
GOAL = 1.3
RAW = "raw `bash -c true`"
_SYSTEMS = {"shellrt-runtime-local": "Runtime + Bash tool, local", "shellrt-local": "Supervisor, local"}
PIPELINE = _SYSTEMS["shellrt-runtime-local"]


async def run(cfg: RunConfig) -> Table:
    rounds, burst = cfg.reps(16, 40), cfg.reps(10, 12)
    table = burst_table(
        "pipeline",
        "issue 22 item 2: `true` through the full pipeline vs a raw spawn, alternating bursts",
        per_call="wall ms / call",
        ms={"cpu_s": "CPU ms (this process)", "child_cpu_s": "CPU ms (children)"},
        ratios={"vs_raw_wall": "x raw wall", "vs_raw_cpu": "x raw CPU"},
    )
    async with AsyncExitStack() as stack:
        started, unusable = await open_systems(list(_SYSTEMS), stack)
        for system_id, row in unusable.items():
            row.system = _SYSTEMS[system_id]
            table.rows.append(row)
        if "shellrt-runtime-local" not in started:
            return table

        async def raw() -> None:
            raw_spawn()

        fns: dict[str, Callable[[], Awaitable[None]]] = {RAW: raw}
        fns.update({_SYSTEMS[i]: _true(s) for i, s in started.items()})
        bursts = await alternating_bursts(fns, rounds, burst)
    children = _children_counted(bursts)
    for label in fns:
        table.rows.append(
            Row(
                label,
                values={
                    "per_call_s": summarize(bursts.medians[label]),
                    "cpu_s": summarize(bursts.cpu[label]).median,
                    "child_cpu_s": summarize(bursts.child_cpu[label]).median,
                    "vs_raw_wall": summarize(bursts.ratios(label, RAW)).median,
                    "vs_raw_cpu": summarize(bursts.cpu_ratios(label, RAW, children=children)).median,
                },
            )
        )
    table.reference = RAW
    table.notes.extend(verdict_notes(bursts, children))
    table.notes.append(
        f"{bursts.rounds} rounds of 1 untimed + {burst} timed calls per side, taking turns (the first side "
        f"rotating); ratios are the median of each round's own ratio; {bursts.load_text()}."
    )
    return table


def _true(system: System) -> Callable[[], Awaitable[None]]:
    async def call() -> None:
        outcome = await system.run("true", 30.0)
        if outcome.exit_code != 0:
            raise RuntimeError(f"{system.name}: `true` returned {outcome.exit_code}: {outcome.note}")

    return call


def _children_counted(bursts: Bursts) -> bool:
    """Whether the pipeline's commands were this process's children (a session cgroup starts them,
    the root case): under the reaper process (non-root) their CPU is the reaper's, not ours."""
    raw = summarize(bursts.child_cpu[RAW]).median
    return raw > 0 and summarize(bursts.child_cpu[PIPELINE]).median >= 0.5 * raw


def verdict_notes(bursts: Bursts, children: bool) -> list[str]:
    """The goal judged by wall time and by CPU time, each with its quartiles over rounds."""
    wall = summarize(bursts.ratios(PIPELINE, RAW))
    cpu = summarize(bursts.cpu_ratios(PIPELINE, RAW, children=children))
    what = "this process + its children" if children else "this process only (commands not our children)"

    def judged(median: float) -> str:
        return "met" if median <= GOAL else "NOT met"

    return [
        f"{PIPELINE} / raw per round, wall: median {wall.median:.2f}x (quartiles {wall.q1:.2f}-{wall.q3:.2f}x),"
        f" goal <= {GOAL}x {judged(wall.median)}.",
        f"{PIPELINE} / raw per round, CPU ({what}): median {cpu.median:.2f}x (quartiles "
        f"{cpu.q1:.2f}-{cpu.q3:.2f}x), goal <= {GOAL}x {judged(cpu.median)}; {os.cpu_count()} CPUs.",
    ]
