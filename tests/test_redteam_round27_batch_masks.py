"""Round 27: a line the loader ran but the mask scan skipped left its workspace source readable.

``shellrt batch run`` masks every task's workspace source in every task's sandbox, from a scan of
the task file made before the run (`scan_task_file`). That scan parsed lines its own way: the raw
bytes (so one byte that is not UTF-8 anywhere in the line -- an old dataset's Latin-1 ``café`` --
made it skip the line, which the loader reads with replacement characters and runs), and only
lines holding the literal ``"workspace"`` (a key written with a JSON escape, ``"\\u0077orkspace"``,
is the same key to the loader). Such a task's source, its hidden tests, was readable by every
other task. The scan now reads each line as the loader does. Real bwrap, real CLI.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from shellrt.batch import load_tasks, scan_task_file
from tests._batch_helpers import run_cli
from tests._bwrap_session import require_bwrap

_SECRET = "HIDDEN-TESTS-of-a-2719"


@pytest.fixture
def bench() -> Iterator[Path]:
    """Two task sources beside (not under) the task file's directory, readable by the sandbox uid."""
    base = Path(tempfile.mkdtemp(prefix="shellrt-r27mask-", dir="/var/tmp"))
    base.chmod(0o755)
    for name in ("a", "b", "c", "run"):
        (base / name).mkdir(mode=0o755)
    for name in ("a", "b"):
        (base / name / "problem.txt").write_text(f"{_SECRET}-{name}\n")
        (base / name / "problem.txt").chmod(0o644)
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_every_line_the_loader_runs_has_its_source_masked(bench: Path) -> None:
    require_bwrap()
    spy = f"cat {bench}/a/problem.txt {bench}/b/problem.txt 2>/dev/null | grep -c {_SECRET} || true"
    tasks = bench / "run" / "tasks.jsonl"
    tasks.write_bytes(
        b'{"id": "a", "sandbox": "bwrap", "workspace": "../a", "commands": ["echo caf\xe9"]}\n'
        + b'{"id": "b", "sandbox": "bwrap", "\\u0077orkspace": "../b", "commands": ["true"]}\n'
        + json.dumps({"id": "c", "sandbox": "bwrap", "workspace": "../c", "commands": [spy]}).encode() + b"\n"
    )
    loaded, errors = load_tasks(tasks)
    assert not errors and [t.id for t in loaded] == ["a", "b", "c"]
    assert {bench / "a", bench / "b"} <= scan_task_file(tasks)  # what the loader runs
    out = bench / "run" / "results.jsonl"
    proc = run_cli("run", str(tasks), "--out", str(out), "-j", "1", "--prestart", "0", "-q", timeout=180)
    assert proc.returncode == 0, proc.stderr
    results = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert results["a"]["status"] == "ok" and results["b"]["status"] == "ok"
    assert results["c"]["commands"][0]["preview"].strip() == "0", results["c"]  # neither source read
