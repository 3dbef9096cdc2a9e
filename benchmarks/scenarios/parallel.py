"""Scenario 2 — parallel: 8 concurrent ``sleep 1``, each system driven the way its users would."""

from __future__ import annotations

import time
from contextlib import AsyncExitStack

from benchmarks._harness import Column, Row, Table, interleave, summarize
from benchmarks.peers import System
from benchmarks.scenarios._common import RunConfig, open_systems, sampled_rows

__all__ = ["SYSTEM_IDS", "run"]

N = 8
COMMAND = "sleep 1"
SYSTEM_IDS = [
    "raw-bash",
    "shellrt-runtime-local",
    "shellrt-local",
    "shellrt-bwrap",
    "shellrt-docker",
    "swerex-session",
    "swerex-oneshot",
    "inspect-local",
]
#: The reference is the agent-facing batch; the Supervisor row stands in if the Runtime cannot start.
#: In --quick mode a system whose first repetition took longer than this is not repeated.
SLOW_S = 3.0
REFERENCES = ["shellrt-runtime-local", "shellrt-local"]

HOW = {
    "raw-bash": "8 threads x subprocess.run",
    "shellrt-runtime-local": "one assistant message with 8 Bash tool_use blocks",
    "shellrt-local": "8 tasks x Supervisor.run",
    "shellrt-bwrap": "8 tasks x Supervisor.run",
    "shellrt-docker": "8 tasks x Supervisor.run",
    "swerex-session": "8 tasks x run_in_session (one session)",
    "swerex-oneshot": "8 tasks x execute",
    "inspect-local": "8 tasks x sandbox.exec",
}


async def run(cfg: RunConfig) -> Table:
    reps = cfg.reps(2, 5)
    table = Table(
        name="parallel",
        title=f"{N} concurrent `{COMMAND}`",
        columns=[
            Column("wall_s", "wall s", ratio=True),
            Column("concurrency", "effective parallelism", fmt="{:.1f}", lower_is_better=False),
            Column("ok", "ok / 8", fmt="{:.0f}", spread=False, lower_is_better=False),
            Column("how", "driven as", spread=False),
        ],
    )
    async with AsyncExitStack() as stack:
        started, unusable = await open_systems(SYSTEM_IDS, stack)
        ok: dict[str, int] = {}
        failures: dict[str, str] = {}
        first: dict[str, float] = {}

        async def once(system_id: str, rep: int) -> float | None:
            if cfg.quick and first.get(system_id, 0.0) > SLOW_S:
                return None  # serialized systems are stable; --quick runs them once
            system = started[system_id]
            begin = time.perf_counter()
            outcomes = await system.run_many([COMMAND] * N, 30.0)
            wall = time.perf_counter() - begin
            good = sum(1 for o in outcomes if o.exit_code == 0)
            ok[system_id] = min(ok.get(system_id, N), good)
            if good < N:
                failures[system_id] = next(o.note for o in outcomes if o.exit_code != 0)[:160]
            first.setdefault(system_id, wall)
            return wall

        samples = await interleave(list(started), reps, once)
    reference = next((r for r in REFERENCES if r in started), None)
    def measured(system_id: str, system: System, values: list[float]) -> Row:
        row = Row(
            system.name,
            values={
                "wall_s": summarize(values),
                "concurrency": summarize([N * 1.0 / s for s in values]),
                "ok": ok.get(system_id, 0),
                "how": HOW[system_id],
            },
        )
        if system_id in failures:
            table.notes.append(f"{row.system}: not every call succeeded, e.g. {failures[system_id]}")
        return row

    for system_id, row in sampled_rows(SYSTEM_IDS, started, unusable, samples, measured):
        if system_id == reference:
            table.reference = row.system
        table.rows.append(row)
    table.notes.append(
        f"{reps} interleaved repetitions; effective parallelism = {N} s of sleeping / wall time."
    )
    if cfg.quick:
        table.notes.append(f"--quick: systems slower than {SLOW_S:.0f} s on the first repetition ran once.")
    if "inspect-local" in started:
        table.notes.append(
            "Inspect caps concurrent subprocesses at the CPU count by default (max_subprocesses; 2 here)."
        )
    if "swerex-session" in started or "swerex-oneshot" in started:
        table.notes.append(
            "SWE-ReX's async methods block the event loop (pexpect / subprocess.run), so concurrent calls serialize."
        )
    if reference != REFERENCES[0]:
        table.notes.append(
            "the shellrt Runtime could not start in this tree, so the Supervisor row is the reference"
        )
    return table
