"""Red team, round 51 (supervisor7): a forged ``tasks.json`` of tens of thousands of records.

The registry never writes more than `MAX_RECORDS` records (more only while more tasks run than
that: every running one is kept), but a reopening read every record the file held, up to its
16 MiB: 45,000 forged "running" records, each naming a live process (identity public in
``/proc``) for a dead owner, took the reopening 60 s on the event loop here (load ~18: a kill
attempt and five ``/proc`` reads per record), left 45,000 notes in the diagnostics and 45,000 tasks
in memory. A command on the local backend writes the file; each forging command bought that at the
next reopening. A reopening now reads at most what the registry writes (`MAX_RECORDS` plus the
session's background-task cap) and says the rest was not read.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shellrt.runtime.task_registry import MAX_RECORDS, TASKS_FILE, TaskRegistry
from shellrt.supervisor.tasks import TaskManager


def _record(i: int, out: Path) -> dict[str, object]:
    task = {
        "id": f"b{i:07d}",
        "command": f"echo {i}",
        "status": "completed",
        "exit_code": 0,
        "pid": 1,
        "output_path": str(out),
        "started_at": "2026-01-01T00:00:00Z",
    }
    return {"task": task, "process": None, "owner": None}


def test_a_reopening_reads_no_more_records_than_the_registry_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed before (1 of 1): all 2,000 records were adopted (a count stands for the time: each
    record judged costs /proc reads and a kill attempt when it says running)."""
    monkeypatch.delenv("SHELLRT_MAX_BACKGROUND_TASKS", raising=False)  # the default cap: 64
    session = tmp_path / "session"
    session.mkdir()
    out = tmp_path / "out.txt"
    out.write_text("line\n")
    written = 2_000
    records = [_record(i, out) for i in range(written)]
    (session / TASKS_FILE).write_text(json.dumps({"version": 1, "tasks": records}))
    tasks = TaskManager()
    notes = TaskRegistry(session, tasks).reopen()
    limit = MAX_RECORDS + 64
    adopted = len(tasks.list())
    assert adopted <= limit, f"{adopted:,} of {written:,} forged records were read (the registry writes {limit:,})"
    assert adopted == limit, adopted  # the first ones still are: a legitimate registry is read whole
    assert any(f"{written - limit:,} more" in note for note in notes), notes
