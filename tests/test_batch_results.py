"""Result file: one fsynced line per task, a crash's partial tail trimmed, --resume ids read back."""

from __future__ import annotations

import json
from pathlib import Path

from shellrt.batch import ResultWriter, TaskResult, read_finished_ids
from shellrt.batch.progress import Progress, percentile


def _result(i: int, status: str = "ok") -> TaskResult:
    return TaskResult.model_validate({"id": f"t{i}", "status": status, "duration_s": i / 10})


def test_writer_appends_complete_lines(tmp_path: Path) -> None:
    out = tmp_path / "r" / "results.jsonl"
    with ResultWriter(out) as writer:
        for i in range(3):
            writer.write(_result(i))
    with ResultWriter(out) as writer:
        writer.write(_result(3, "failed"))
    lines = out.read_text().splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["t0", "t1", "t2", "t3"]
    assert read_finished_ids(out) == {"t0", "t1", "t2", "t3"}


def test_partial_tail_is_ignored_then_trimmed(tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    with ResultWriter(out) as writer:
        writer.write(_result(0))
        writer.write(_result(1))
    with out.open("ab") as fh:
        fh.write(b'{"id": "t2", "status": "o')  # crash mid-write
    assert read_finished_ids(out) == {"t0", "t1"}
    with ResultWriter(out) as writer:
        writer.write(_result(2))
    lines = out.read_text().splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["t0", "t1", "t2"]


def test_missing_file_means_nothing_finished(tmp_path: Path) -> None:
    assert read_finished_ids(tmp_path / "nope.jsonl") == set()


def test_progress_summary_and_percentiles(tmp_path: Path) -> None:
    assert percentile([], 50) == 0.0
    assert percentile([1, 2, 3, 4], 50) == 2
    assert percentile(list(range(1, 101)), 95) == 95

    class Sink:
        def __init__(self) -> None:
            self.text = ""

        def write(self, s: str) -> int:
            self.text += s
            return len(s)

        def flush(self) -> None:
            pass

        def isatty(self) -> bool:
            return False

    sink = Sink()
    progress = Progress(4, stream=sink)  # type: ignore[arg-type]
    for i, status in enumerate(["ok", "failed", "timeout", "ok"]):
        progress.add(_result(i, status))
    assert sink.text == ""  # not a TTY: nothing while running
    summary = progress.summary()
    assert "finished 4 task(s)" in summary and "p50" in summary and "p95" in summary
    assert "ok 2, failed 1, timeout 1" in summary
    live = Progress(10, stream=sink, live=True, interval_s=0)  # type: ignore[arg-type]
    live.add(_result(1))
    assert "1/10" in sink.text and "fail 0" in sink.text
