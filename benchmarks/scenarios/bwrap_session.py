"""Scenario — bwrap session latency against a raw spawn, paired round by round (issue 22, item 3).

The latency table times each system's bursts among seven others, seconds apart: on a loaded
machine its bwrap row and its raw row see different loads. Here the raw spawn and the session
(and the local backend, for reference) take turns in back-to-back bursts, round after round,
and each round's ratio is taken from bursts timed next to each other (`benchmarks._bursts`).
The raw spawn reads its output as ``Supervisor.run`` does: one pipe, stderr merged, to its end.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Literal

from benchmarks._bursts import BURST, Bursts, alternating_bursts, raw_spawn
from benchmarks._harness import Row, Table, summarize
from benchmarks.peers import SystemUnavailable
from benchmarks.peers.ours import ShellrtSupervisor
from benchmarks.scenarios._common import RunConfig, burst_table

__all__ = ["run"]

RAW = "raw bash spawn (one merged pipe, read to EOF)"
#: Row label -> backend kind.
OURS: dict[str, Literal["bwrap", "local"]] = {
    "shellrt bwrap session (Supervisor)": "bwrap",
    "shellrt local (Supervisor)": "local",
}


async def run(cfg: RunConfig) -> Table:
    rounds = cfg.reps(10, 30)
    table = burst_table(
        "bwrap-session",
        "`true` in a bwrap session vs a raw spawn, alternating bursts",
        ms={"fastest_s": "fastest call ms"},
        ratios={"vs_raw": "x raw (median of rounds)", "fastest_vs_raw": "fastest x raw"},
    )
    fns: dict[str, Callable[[], Awaitable[None]]] = {}

    async def raw() -> None:
        raw_spawn()

    fns[RAW] = raw
    async with AsyncExitStack() as stack:
        for label, kind in OURS.items():
            try:
                system = await stack.enter_async_context(ShellrtSupervisor(kind))
            except SystemUnavailable as exc:
                table.rows.append(Row(label, status="skipped", note=str(exc)))
                continue

            async def call(system: ShellrtSupervisor = system, label: str = label) -> None:
                outcome = await system.run("true", 30.0)
                if outcome.exit_code != 0:
                    raise RuntimeError(f"{label}: `true` returned {outcome.exit_code}")

            fns[label] = call
        bursts = await alternating_bursts(fns, rounds)
    table.rows[:0] = [_row(bursts, label) for label in fns]
    for label in fns:
        if label != RAW:
            spread = summarize(bursts.ratios(label, RAW))
            table.notes.append(
                f"{label}: per-round x raw {spread.q1:.2f}-{spread.q3:.2f} (quartiles), "
                f"{spread.low:.2f}-{spread.high:.2f} (all rounds)."
            )
    table.notes.append(
        f"{bursts.rounds} rounds; per round each system runs 1 untimed + {BURST} timed calls in a row, "
        "the systems taking turns (the order rotating); a round's figure is its burst's median."
    )
    table.notes.append(
        "x raw = the median over rounds of (burst median / the raw burst median of the same round); "
        f"fastest x raw = fastest call / raw's fastest call; {bursts.load_text()}."
    )
    return table


def _row(bursts: Bursts, label: str) -> Row:
    return Row(
        label,
        values={
            "per_call_s": summarize(bursts.medians[label]),
            "fastest_s": bursts.fastest[label],
            "vs_raw": bursts.ratio(label, RAW),
            "fastest_vs_raw": bursts.ratio_of_fastest(label, RAW),
        },
    )
