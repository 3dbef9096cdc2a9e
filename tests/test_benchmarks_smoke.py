"""Smoke test for the benchmark harness: statistics, ratios, tables and JSON on synthetic numbers.

Benchmarks are not tests: nothing here times anything or starts a peer.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

import pytest

from benchmarks._harness import (
    Column,
    Row,
    Table,
    render_table,
    summarize,
    tables_from_json,
    tables_to_json,
)


def test_harness_math_table_and_json_on_synthetic_numbers() -> None:
    stats = summarize([3.0, 1.0, 2.0, 4.0, 5.0])
    assert (stats.median, stats.low, stats.high, stats.n) == (3.0, 1.0, 5.0, 5)
    assert (stats.q1, stats.q3) == (2.0, 4.0)
    assert stats.spread_pct() == pytest.approx(100.0 * (4.0 - 2.0) / 2 / 3.0)
    with pytest.raises(ValueError):
        summarize([])

    table = Table(
        name="latency",
        title="synthetic",
        columns=[Column("t", "ms / call", scale=1000.0, ratio=True), Column("how", "how", spread=False)],
        reference="shellrt local",
        rows=[
            Row("shellrt local", values={"t": summarize([0.002, 0.002, 0.003]), "how": "ours"}),
            Row("peer", values={"t": summarize([0.004, 0.004, 0.005]), "how": "theirs"}),
            Row("fast peer", values={"t": 0.001, "how": "multi\nline"}),
            Row("missing peer", status="skipped", note="not installed"),
        ],
    )
    peer, fast, missing = table.rows[1], table.rows[2], table.rows[3]
    assert table.ratio(peer, table.columns[0]) == pytest.approx(2.0)
    assert table.ratio(fast, table.columns[0]) == pytest.approx(0.5)
    assert table.ratio(missing, table.columns[0]) is None

    text = render_table(table)
    assert "2.00x (shellrt ahead)" in text
    assert "0.50x (shellrt behind)" in text
    assert "skipped [1]" in text and "[1] missing peer: not installed" in text
    assert "shellrt local *" in text and "2.00 ±" in text
    assert "| multi line" in text  # a cell never breaks the table

    doc = json.loads(json.dumps(tables_to_json([table], quick=True, elapsed_s=1.5, peers={"swe-rex": None})))
    rows = doc["tables"][0]["rows"]
    assert rows[1]["ratio_to_shellrt"]["t"] == pytest.approx(2.0)
    assert rows[0]["values"]["t"]["median"] == pytest.approx(0.002)
    assert rows[3]["status"] == "skipped" and doc["versions"] == {"swe-rex": None}
    assert render_table(tables_from_json(doc)[0]) == text


@pytest.mark.anyio
async def test_alternating_bursts_time_bursts_after_an_untimed_call_rotating_the_start() -> None:
    """The bwrap goal's timing (the quick table's pattern): per round, each function's untimed
    call then `BURST` timed ones in a row, the round's first function rotating."""
    from benchmarks._bursts import BURST, alternating_bursts

    calls: list[str] = []

    def recorder(name: str) -> Callable[[], Awaitable[None]]:
        async def fn() -> None:
            calls.append(name)

        return fn

    bursts = await alternating_bursts({"a": recorder("a"), "b": recorder("b")}, 3)
    burst = BURST + 1
    assert (
        calls == ["a"] * burst + ["b"] * burst + ["b"] * burst + ["a"] * burst + ["a"] * burst + ["b"] * burst
    )
    assert bursts.rounds == 3 and [len(v) for v in bursts.medians.values()] == [3, 3]
    assert all(0 <= bursts.fastest[k] <= min(v) for k, v in bursts.medians.items())


def test_burst_ratios_pair_each_round_and_compare_the_fastest_calls() -> None:
    """The ratio is the median of each round's own ratio (both bursts saw the same load), not
    of medians taken over rounds of different load; the fastest calls are compared apart."""
    from benchmarks._bursts import Bursts

    bursts = Bursts(
        medians={"ours": [2.0, 20.0, 3.0], "raw": [1.0, 5.0, 2.0]}, fastest={"ours": 1.5, "raw": 1.0}
    )
    assert bursts.ratios("ours", "raw") == pytest.approx([2.0, 4.0, 1.5])
    assert bursts.ratio("ours", "raw") == pytest.approx(2.0)
    assert bursts.ratio_of_medians("ours", "raw") == pytest.approx(1.5)
    assert bursts.ratio_of_fastest("ours", "raw") == pytest.approx(1.5)


def test_raw_spawn_reads_its_output_through_one_merged_pipe() -> None:
    """The raw baseline pays for the output handling ours pays: stdout piped and read to its
    end, stderr merged into it (it inherited the benchmark's stdout before)."""
    import subprocess

    from benchmarks import _bursts

    seen: list[dict[str, object]] = []
    real = subprocess.run

    def spy(argv: list[str], **kwargs: object) -> object:
        seen.append(kwargs)
        return real(argv, **kwargs)  # type: ignore[call-overload]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_bursts.subprocess, "run", spy)
        _bursts.raw_spawn()
    assert seen == [{"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT, "check": False}]
