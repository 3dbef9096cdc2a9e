"""`bench_supervisor.bench_latency` measures every local layer it reports, the full pipeline included.

Not a timing test: it runs each path a few times and checks that every path ran (the
Runtime's transcript holds its calls), that the session directories stay out of the
workspace (inside, the protected-files check rescans them after each command), and that each row carries its median, fastest-call
ratio and main-thread CPU, so the issue-22 yardstick (Runtime + Bash vs a raw spawn) cannot
silently drop out of the benchmark.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.bench_supervisor import bench_latency
from sandbox import SandboxPolicy
from sandbox.local import LocalBackend


@pytest.mark.anyio
async def test_bench_latency_times_raw_supervisor_tool_and_runtime(tmp_path: Path) -> None:
    async with LocalBackend(None, SandboxPolicy(workspace=tmp_path)) as local:
        row = await bench_latency(local, tmp_path, 3, ["bash", "-c", "true"])
    for part in ("supervisor", "tool", "runtime"):
        assert row[f"{part}_ms"] > 0 and row[f"{part}_ratio"] > 0 and row[f"{part}_fastest_ratio"] > 0
        assert row[f"{part}_cpu_us"] > 0
    assert row["raw_ms"] > 0 and row["raw_fastest_ms"] > 0 and len(row["loadavg"]) == 3
    # One warm-up and three timed calls went through Runtime.run, each a Bash `true` that ran;
    # the sessions lived outside the workspace (nothing of theirs is left in it).
    assert row["runtime_calls_ran"] == 4
    assert list(tmp_path.iterdir()) == []
