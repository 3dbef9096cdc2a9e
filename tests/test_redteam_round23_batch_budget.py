"""Round 23: one task's output must not decide another task's result (the run's output budget).

Every task of a run takes its spools, kept outputs and collected files from one run-wide budget
(round 8). Once a hostile task had used it up, the next task's ``collect.output: full`` files were
kept EMPTY (0 bytes for 5 printed) with ``output_lost`` unset and status ``ok`` -- a scorer reading
``cmd-N.out`` saw a run that printed nothing -- or, when the loss was reported, the task was
``failed`` although every command exited 0. A verdict now comes from the task's own commands only:
a kept output is whole or its loss is named, and a loss the run's budget caused (other tasks' use)
makes the task ``error`` (the CLI exits 1), never ``failed`` or ``ok``. Real bwrap tasks, real CLI.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tests._batch_helpers import run_tasks
from tests._bwrap_session import require_bwrap

_HOG = {"id": "hog", "commands": ["head -c 3000000 /dev/zero | tr '\\0' x"], "collect": {"output": "full"}}


def _cli(tmp_path: Path, lines: list[dict[str, Any]]) -> tuple[int, str, dict[str, Any]]:
    proc, results = run_tasks(tmp_path, lines, "--output-budget", "1m")
    return proc.returncode, proc.stderr, results


def test_a_kept_output_is_never_silently_short(tmp_path: Path) -> None:
    """The hog keeps the whole budget; the next task's kept outputs were empty files, reported whole."""
    require_bwrap()
    small = {"id": "small", "commands": ["echo fine", "seq 1 20000"], "collect": {"output": "full"}}
    code, err, results = _cli(tmp_path, [_HOG, small])
    assert set(results) == {"hog", "small"}, err
    for outcome in results["small"]["commands"]:
        path = outcome["output_path"]
        whole = path is not None and os.path.getsize(path) == outcome["stdout_bytes"]
        assert whole or outcome["output_lost"], outcome  # short, so it must say so
    # and what another task used up is no verdict on this one: its commands all exited 0
    assert results["small"]["status"] in ("ok", "error"), results["small"]
    if results["small"]["status"] == "error":
        assert "--output-budget" in (results["small"]["error"] or ""), results["small"]
        assert code == 1, err


def test_the_run_budget_never_turns_a_passing_task_into_failed(tmp_path: Path) -> None:
    """Each command of ``honest`` exits 0; before, the loss the hog caused made it ``failed``."""
    require_bwrap()
    honest = {"id": "honest", "commands": ["seq 1 200000", "true"], "collect": {"output": "full"}}
    previews = {"id": "previews", "commands": ["seq 1 20000"]}  # 109 KB: head and tail kept in memory
    code, err, results = _cli(tmp_path, [_HOG, honest, previews])
    preview = results["previews"]["commands"][0]["preview"]
    assert results["previews"]["status"] == "ok", results[
        "previews"
    ]  # was `failed`: nothing it shows is lost
    assert preview.startswith("1\n2\n3\n") and preview.endswith("19999\n20000\n"), preview
    assert results["honest"]["status"] != "failed", results["honest"]
    assert [c["exit_code"] for c in results["honest"]["commands"]] == [0, 0]
    assert results["honest"]["status"] == "error" and "--output-budget" in results["honest"]["error"]
    assert code == 1, err
    # the hog's own loss is its own doing: more than its share (here, with one task at a time, the
    # whole budget), a verdict like a per-command limit
    assert results["hog"]["status"] == "failed", results["hog"]
    assert "share" in results["hog"]["commands"][0]["output_lost"], results["hog"]


async def _hog_then_honest(out: Path) -> dict[str, Any]:
    """The hog fills its spool and keeps running; only then does the honest task start beside it."""
    import glob
    import tempfile

    import anyio

    from shellrt.batch import Task, run

    tag = os.urandom(4).hex()
    bwrap = {"backend": {"type": "bwrap"}}
    hog = Task.model_validate(
        {"id": f"hog{tag}", "sandbox": bwrap, "commands": [_HOG["commands"][0], "sleep 120"]}
    )
    honest = Task.model_validate(
        {"id": f"honest{tag}", "sandbox": bwrap, "commands": ["seq 1 50000"], "collect": {"output": "full"}}
    )
    spools = os.path.join(tempfile.gettempdir(), f"shellrt-batch-hog{tag}-*", "session", "**", "*.out")

    async def tasks() -> Any:
        yield hog
        with anyio.fail_after(120):
            while sum(os.path.getsize(f) for f in glob.glob(spools, recursive=True)) < 256 << 10:
                await anyio.sleep(0.05)  # the hog's spool holds its share (or the whole budget, before)
        yield honest

    async with run(tasks(), concurrency=2, prestart=0, out=out, output_budget=1 << 20) as results:
        async for result in results:
            if result.id == honest.id:
                return result.model_dump()  # leaving the block stops the hog's sleep
    raise AssertionError("the honest task never finished")


def test_a_running_task_cannot_use_up_the_budget_its_neighbour_needs(tmp_path: Path) -> None:
    """Before, the hog's spool took the whole run budget while it ran: the honest task beside it
    (289 KB printed, kept) was cut. Each task now holds at most its share (budget / window)."""
    import anyio

    require_bwrap()
    honest = anyio.run(_hog_then_honest, tmp_path / "results.jsonl")
    outcome = honest["commands"][0]
    assert honest["status"] == "ok", honest
    assert (
        outcome["output_lost"] is None and os.path.getsize(outcome["output_path"]) == outcome["stdout_bytes"]
    )


def test_collected_files_stay_within_the_tasks_share(tmp_path: Path) -> None:
    """Two tasks at a time: each may hold half the budget. Before, one task's collected files could
    take all of it (and keep it for the run), so every later task's collection failed."""
    require_bwrap()
    big = {"id": "big", "commands": ["head -c 900000 /dev/zero > blob"], "collect": {"files": ["blob"]}}
    proc, results = run_tasks(tmp_path, [big], "--output-budget", "1m", jobs=2)
    result = results["big"]
    assert result["status"] == "error" and "share" in (result["error"] or ""), result
    assert proc.returncode == 1, proc.stderr


def test_collected_empty_files_cost_their_inodes(tmp_path: Path) -> None:
    """300 empty files cost 0 bytes of the budget and stayed for the run (up to 1,000,000 a task:
    the host's inodes). Each now counts at least an inode's share of the disk (16 KiB)."""
    require_bwrap()
    many = {
        "id": "many",
        "commands": ["mkdir out && cd out && touch $(seq 1 300)"],
        "collect": {"files": ["out"]},
    }
    proc, results = run_tasks(tmp_path, [many], "--output-budget", "1m")
    result = results["many"]
    assert result["status"] == "error" and "--output-budget" in (result["error"] or ""), result
    assert proc.returncode == 1, proc.stderr
    kept = list((tmp_path / "results.jsonl.artifacts" / "many" / "files" / "out").iterdir())
    assert len(kept) <= (1 << 20) // 16_384, len(kept)  # stopped at the budget
