"""``shellrt tools``: the tools and their semantics, as a table and as JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests._mcp_support import ROOT, isolated_env


def _run(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "shellrt", "tools", *args],
        cwd=ROOT,
        env={**isolated_env(home), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_json_lists_semantics(tmp_path: Path) -> None:
    proc = _run("--json", "--workspace", str(tmp_path), "--deny", "WebFetch", home=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = {r["name"]: r for r in json.loads(proc.stdout)}
    assert rows["Bash"]["read_only"] == "depends on input"
    assert rows["Bash"]["destructive"] == "depends on input"
    assert rows["Read"]["read_only"] is True and rows["Read"]["concurrency_safe"] is True
    assert rows["Write"]["read_only"] is False
    assert rows["Bash"]["deferred"] is False
    if "WebFetch" in rows:
        assert rows["WebFetch"]["hidden_by_rule"] is True
        assert rows["WebFetch"]["open_world"] is True


def test_table_output(tmp_path: Path) -> None:
    proc = _run("--workspace", str(tmp_path), home=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split()[:3] == ["tool", "read-only", "concurrent"]
    bash = next(line for line in lines if line.startswith("Bash "))
    assert "per input" in bash
    read = next(line for line in lines if line.startswith("Read "))
    assert read.split()[1] == "yes"


def test_missing_workspace_is_a_clear_error(tmp_path: Path) -> None:
    proc = _run("--workspace", str(tmp_path / "nope"), home=tmp_path)
    assert proc.returncode == 2 and "nope" in proc.stderr
