"""Benchmark harness: interleaved repetitions, median and spread, tables with a ratio-to-shellrt column.

Nothing here times anything by itself except `interleave`; everything else is
pure (statistics, table layout, JSON) so the smoke test can run it on synthetic
numbers.
"""

from __future__ import annotations

import json
import platform
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "Column",
    "Row",
    "Samples",
    "Stats",
    "Table",
    "interleave",
    "render_table",
    "summarize",
    "tables_from_json",
    "tables_to_json",
    "write_json",
]

Status = Literal["ok", "skipped", "failed", "did not finish"]


@dataclass(frozen=True)
class Stats:
    """Median and spread of repeated measurements (spread = min..max, plus the IQR)."""

    median: float
    low: float
    high: float
    q1: float
    q3: float
    n: int

    def spread_pct(self) -> float:
        """Half the interquartile range as a percentage of the median (0 when n < 2)."""
        if self.n < 2 or self.median == 0:
            return 0.0
        return 100.0 * (self.q3 - self.q1) / 2.0 / abs(self.median)


def summarize(values: Sequence[float]) -> Stats:
    """Median, min, max and quartiles of ``values`` (at least one value)."""
    if not values:
        raise ValueError("summarize() needs at least one value")
    ordered = sorted(values)
    n = len(ordered)
    if n >= 2:
        q1, _, q3 = statistics.quantiles(ordered, n=4, method="inclusive")
    else:
        q1 = q3 = ordered[0]
    return Stats(median=statistics.median(ordered), low=ordered[0], high=ordered[-1], q1=q1, q3=q3, n=n)


@dataclass(frozen=True)
class Column:
    """One figure of a table.

    ``scale`` multiplies stored values for display (e.g. 1000 to show seconds as
    ms); ``ratio`` marks the column the ratio-to-shellrt column is computed from.
    """

    key: str
    label: str
    fmt: str = "{:.2f}"
    scale: float = 1.0
    lower_is_better: bool = True
    ratio: bool = False
    spread: bool = True


Value = Stats | float | int | str | None


@dataclass
class Row:
    """One system's figures in one table."""

    system: str
    values: dict[str, Value] = field(default_factory=dict)
    status: Status = "ok"
    note: str = ""
    is_reference: bool = False


@dataclass
class Table:
    """One scenario's result: rows are systems, columns are figures."""

    name: str
    title: str
    columns: list[Column]
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    reference: str | None = None

    def ratio_columns(self) -> list[Column]:
        return [c for c in self.columns if c.ratio]

    def reference_row(self) -> Row | None:
        name = self.reference
        for row in self.rows:
            if row.status == "ok" and (row.system == name or (name is None and row.is_reference)):
                return row
        return None

    def ratio(self, row: Row, col: Column) -> float | None:
        """``row``'s value in ``col`` divided by the reference (shellrt) row's, or None."""
        ref = self.reference_row()
        if ref is None or row.status != "ok":
            return None
        mine, theirs = _center(row.values.get(col.key)), _center(ref.values.get(col.key))
        if mine is None or theirs is None or theirs == 0:
            return None
        return mine / theirs


def _center(value: Value) -> float | None:
    if isinstance(value, Stats):
        return value.median
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    return None


def format_value(col: Column, value: Value) -> str:
    """Display one cell: median (± half-IQR %) for Stats, plain for numbers, as-is for text."""
    if value is None:
        return "-"
    if isinstance(value, str):
        return _one_line(value)
    if isinstance(value, Stats):
        text = col.fmt.format(value.median * col.scale)
        if col.spread and value.n >= 2:
            text += f" ±{value.spread_pct():.0f}%"
        return text
    return col.fmt.format(value * col.scale)


def _one_line(text: str, limit: int = 90) -> str:
    """Cells stay on one line (a newline would break the table); long text is cut with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def format_ratio(ratio: float | None, col: Column, *, verdict: bool = True) -> str:
    """``1.85x (shellrt ahead)``: the direction word depends on whether lower is better.

    ``verdict=False`` (shellrt's own rows) prints the bare ratio.
    """
    if ratio is None:
        return "-"
    text = f"{ratio:.2f}x"
    if not verdict:
        return text
    ahead = ratio > 1.0 if col.lower_is_better else ratio < 1.0
    if abs(ratio - 1.0) < 0.05:
        return text + " (tie)"
    return text + (" (shellrt ahead)" if ahead else " (shellrt behind)")


def render_table(table: Table) -> str:
    """A fixed-width text table (also valid GitHub markdown)."""
    ratio_cols = table.ratio_columns()
    headers = ["system", *(c.label for c in table.columns), *(f"{c.label} vs shellrt" for c in ratio_cols)]
    body: list[list[str]] = []
    footnotes: list[str] = []
    for row in table.rows:
        name = row.system + (" *" if row.system == table.reference else "")
        if row.status in ("skipped", "failed"):
            label: str = row.status
            if row.note:
                footnotes.append(f"[{len(footnotes) + 1}] {row.system}: {_one_line(row.note, 400)}")
                label += f" [{len(footnotes)}]"
            cells = [name, label, *("" for _ in range(len(headers) - 2))]
        else:
            cells = [name, *(format_value(c, row.values.get(c.key)) for c in table.columns)]
            ours = row.system.lower().startswith("shellrt")
            cells += [format_ratio(table.ratio(row, c), c, verdict=not ours) for c in ratio_cols]
        body.append(cells)
    widths = [max(len(h), *(len(r[i]) for r in body)) if body else len(h) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    out = [
        f"### {table.name}: {table.title}",
        "",
        line(headers),
        "|" + "|".join("-" * (w + 2) for w in widths) + "|",
    ]
    out.extend(line(r) for r in body)
    if table.reference:
        out.append("")
        out.append(f"`*` = reference row for the ratio column ({table.reference}).")
    for col in ratio_cols:
        direction = "lower" if col.lower_is_better else "higher"
        out.append(f"`{col.label} vs shellrt` = system's {col.label} / shellrt's ({direction} is better).")
    out.append("Cells show the median ±half the interquartile range (as % of the median) over repetitions.")
    for note in table.notes:
        out.append(f"- {_one_line(note, 600)}")
    out.extend(footnotes)
    return "\n".join(out)


@dataclass
class Samples:
    """Measurements per system, and the error that stopped a system (it is not measured again)."""

    values: dict[str, list[float]]
    errors: dict[str, str]


async def interleave(
    systems: Sequence[str],
    reps: int,
    once: Callable[[str, int], Awaitable[float | None]],
) -> Samples:
    """Run ``once(system, rep)`` for every system in every repetition, rotating the order.

    Each repetition visits all systems (so drift and noise hit them alike); the
    start system rotates per repetition. ``once`` returns a measurement or None
    (not recorded). An exception marks that system failed for the rest of the run.
    """
    samples = Samples(values={s: [] for s in systems}, errors={})
    order = list(systems)
    for rep in range(reps):
        k = rep % len(order) if order else 0
        for system in order[k:] + order[:k]:
            if system in samples.errors:
                continue
            try:
                value = await once(system, rep)
            except Exception as exc:
                samples.errors[system] = f"{type(exc).__name__}: {exc}"[:160]
                continue
            if value is not None:
                samples.values[system].append(value)
    return samples


def _jsonable(value: Value) -> Any:
    if isinstance(value, Stats):
        return asdict(value)
    return value


def tables_to_json(
    tables: Sequence[Table], *, quick: bool, elapsed_s: float, peers: dict[str, str | None] | None = None
) -> dict[str, Any]:
    """A machine-readable document for ``tables`` (see benchmarks/README.md for the schema)."""
    return {
        "schema": "shellrt-bench/1",
        "created_unix": time.time(),
        "quick": quick,
        "elapsed_s": elapsed_s,
        "commit": _git_commit(),
        "machine": {
            "python": sys.version.split()[0],
            "platform": platform.platform(),
            "cpus": _cpu_count(),
            "loadavg_at_end": list(_loadavg()),
        },
        "versions": dict(peers or {}),
        "tables": [
            {
                "name": t.name,
                "title": t.title,
                "reference": t.reference,
                "columns": [asdict(c) for c in t.columns],
                "notes": t.notes,
                "rows": [
                    {
                        "system": r.system,
                        "status": r.status,
                        "note": r.note,
                        "values": {k: _jsonable(v) for k, v in r.values.items()},
                        "ratio_to_shellrt": {c.key: t.ratio(r, c) for c in t.ratio_columns()},
                    }
                    for r in t.rows
                ],
            }
            for t in tables
        ],
    }


def tables_from_json(document: dict[str, Any]) -> list[Table]:
    """Rebuild the tables of a `tables_to_json` document (to print them again without re-running)."""
    tables: list[Table] = []
    for t in document["tables"]:
        rows = []
        for r in t["rows"]:
            values: dict[str, Value] = {
                k: Stats(**v) if isinstance(v, dict) else v for k, v in r["values"].items()
            }
            rows.append(Row(r["system"], values=values, status=r["status"], note=r["note"]))
        tables.append(
            Table(
                name=t["name"],
                title=t["title"],
                columns=[Column(**c) for c in t["columns"]],
                rows=rows,
                notes=list(t["notes"]),
                reference=t["reference"],
            )
        )
    return tables


def _loadavg() -> tuple[float, float, float]:
    """1/5/15-minute load averages (other work on the machine adds noise to every row)."""
    import os

    try:
        return os.getloadavg()
    except OSError:  # pragma: no cover - unavailable
        return (0.0, 0.0, 0.0)


def _cpu_count() -> int:
    import os

    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        return os.cpu_count() or 1


def _git_commit() -> str | None:
    """The repository's HEAD commit (None outside a git checkout)."""
    import subprocess

    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def write_json(path: Path, document: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2, sort_keys=False) + "\n")
