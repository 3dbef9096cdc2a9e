"""Scenario 3 — output: commands printing 1 MB, 15 MB and 300 MB.

Each measurement runs in a fresh process (`benchmarks._child`) so its peak RSS
(VmHWM) belongs to one system; the parent caps its wall time and reports
"did not finish" past the cap.
"""

from __future__ import annotations

from dataclasses import dataclass

import anyio

from benchmarks._harness import Column, Row, Stats, Table, summarize
from benchmarks.peers import make
from benchmarks.scenarios._common import RunConfig
from benchmarks.scenarios._spawn import run_child

__all__ = ["SIZES", "SYSTEM_IDS", "run"]

MB = 1_000_000
SIZES = {"1MB": 1 * MB, "15MB": 15 * MB, "300MB": 300 * MB}
SYSTEM_IDS = [
    "raw-bash",
    "shellrt-local",
    "shellrt-runtime-local",
    "swerex-session",
    "swerex-oneshot",
    "inspect-local",
]
REFERENCE = "shellrt-local"
#: In --quick mode 300 MB runs (once) only for systems that did 15 MB within this many seconds.
QUICK_300MB_IF_15MB_UNDER_S = 3.0


@dataclass
class _Cell:
    walls: list[float]
    peaks_mb: list[float]
    deltas_mb: list[float]
    recovered: list[int]
    dnf: bool = False
    error: str = ""
    skipped_reason: str = ""


def _recovered_text(got: int, expected: int) -> str:
    if got >= expected:
        return "full"
    if got == 0:
        return "none"
    return f"{got / 2**20:.1f} MiB ({100.0 * got / expected:.0f}%) truncated"


async def run(cfg: RunConfig) -> Table:
    reps = cfg.reps(1, 3)
    cap_s = 10.0 if cfg.quick else 60.0
    cells: dict[tuple[str, str], _Cell] = {}
    available: list[str] = []
    skipped: dict[str, Row] = {}
    for system_id in SYSTEM_IDS:
        system = make(system_id)
        reason = system.unavailable()
        if reason:
            skipped[system_id] = Row(system.name, status="skipped", note=reason)
        else:
            available.append(system_id)

    for label, nbytes in SIZES.items():
        size_reps = reps
        if label == "300MB":
            size_reps = 1 if cfg.quick else 2
        for rep in range(size_reps):
            k = rep % max(1, len(available))
            for system_id in available[k:] + available[:k]:
                cell = cells.setdefault((system_id, label), _Cell([], [], [], []))
                if cell.dnf or cell.error or cell.skipped_reason:
                    continue
                reason = _skip_reason(cells, system_id, label, cfg)
                if reason:
                    cell.skipped_reason = reason
                    continue
                result = await anyio.to_thread.run_sync(
                    run_child, "output", system_id, str(nbytes), cap_s + 30.0, cap_s
                )
                if result is None:
                    cell.dnf = True
                elif "error" in result or "unavailable" in result:
                    cell.error = str(result.get("error") or result.get("unavailable"))
                elif result["exit_code"] != 0:
                    cell.error = f"exit {result['exit_code']}: {result['note']}"
                else:
                    cell.walls.append(result["wall_s"])
                    cell.peaks_mb.append(result["peak_rss_kb"] / 1024.0)  # VmHWM, see _child
                    cell.deltas_mb.append((result["peak_rss_kb"] - result["rss_before_kb"]) / 1024.0)
                    cell.recovered.append(int(result["recoverable_bytes"]))

    columns: list[Column] = []
    for label in SIZES:
        columns += [
            Column(f"{label}_wall_s", f"{label} wall s", ratio=label != "1MB"),
            Column(f"{label}_rss_growth_mb", f"{label} RSS growth MB", fmt="{:.0f}", spread=False),
            Column(f"{label}_recovered", f"{label} recoverable", spread=False),
        ]
    table = Table(name="output", title="commands printing 1 MB, 15 MB, 300 MB", columns=columns)
    for system_id in SYSTEM_IDS:
        name = make(system_id).name
        if system_id in skipped:
            row = skipped[system_id]
        else:
            row = Row(name)
            for label, nbytes in SIZES.items():
                row.values.update(_cell_values(label, nbytes, cells.get((system_id, label)), cap_s))
        if system_id == REFERENCE:
            table.reference = row.system
        table.rows.append(row)
    table.notes += [
        f"each run is a fresh process; {reps} interleaved repetition(s) for 1 MB and 15 MB,"
        f" {1 if cfg.quick else 2} for 300 MB; cap {cap_s:.0f} s per run (past it: did not finish).",
        "RSS growth = the measuring process's peak RSS (VmHWM) after the command minus its peak before it"
        " (system started and warm); absolute peaks are in the JSON file.",
        "recoverable = bytes the caller can get back: in memory for the peers, the spooled output file for shellrt"
        " (the Runtime row: the file its tool_result points to, next to a head/tail preview for the model).",
        "output is `yes <99 x's> | head -c N` (100-byte lines).",
    ]
    if cfg.quick:
        table.notes.append(
            f"--quick: 300 MB runs once, and only for systems that printed 15 MB in under"
            f" {QUICK_300MB_IF_15MB_UNDER_S:.0f} s (others show 'not run (--quick)')."
        )
    return table


def _skip_reason(cells: dict[tuple[str, str], _Cell], system_id: str, label: str, cfg: RunConfig) -> str:
    order = list(SIZES)
    for smaller in order[: order.index(label)]:
        prev = cells.get((system_id, smaller))
        if prev is not None and prev.dnf:
            return f"not run (did not finish {smaller})"
    if cfg.quick and label == "300MB":
        prev = cells.get((system_id, "15MB"))
        if prev is None or not prev.walls or max(prev.walls) > QUICK_300MB_IF_15MB_UNDER_S:
            return "not run (--quick)"
    return ""


def _cell_values(label: str, nbytes: int, cell: _Cell | None, cap_s: float) -> dict[str, Stats | float | str]:
    keys = (f"{label}_wall_s", f"{label}_rss_growth_mb", f"{label}_recovered")
    if cell is None:
        return dict.fromkeys(keys, "-")
    if cell.skipped_reason:
        return {keys[0]: cell.skipped_reason, keys[1]: "-", keys[2]: "-"}
    if cell.error:
        first_line = cell.error.strip().splitlines()[0] if cell.error.strip() else "?"
        return {keys[0]: f"failed: {first_line[:70]}", keys[1]: "-", keys[2]: "none"}
    if cell.dnf and not cell.walls:
        return {keys[0]: f"did not finish ({cap_s:.0f} s)", keys[1]: "-", keys[2]: "-"}
    peak = summarize(cell.peaks_mb)
    growth = summarize(cell.deltas_mb)
    values: dict[str, Stats | float | str] = {
        keys[0]: summarize(cell.walls),
        f"{label}_peak_rss_mb": peak.median,
        keys[1]: growth.median,
        keys[2]: _recovered_text(min(cell.recovered), nbytes),
    }
    if cell.dnf:
        values[keys[0]] = f"{summarize(cell.walls).median:.2f} (1+ run did not finish)"
    return values
