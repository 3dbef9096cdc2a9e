"""Round 37 (speed): the two new per-call benchmarks keep working as the code they reach into moves.

`benchmarks.percall_handoff` drives the session cgroup's spawner directly (root: the session cgroup
is a root caller's; the CI lane runs as root); `benchmarks.percall_compiled` edits an exported
copy of the tree before mypyc compiles it, and each edit must still apply to the committed code
(the build itself takes minutes: not run here).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


@pytest.mark.skipif(os.geteuid() != 0 and os.environ.get("CI") != "true", reason="the session cgroup is root's")
def test_percall_handoff_measures_both_starts() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.percall_handoff", "--rounds", "2", "--burst", "5"],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {line.split()[0]: line.split()[1:] for line in done.stdout.splitlines()[2:4]}
    assert set(rows) == {"spawner", "direct"}
    assert all(float(v[0]) > 0 and float(v[2]) > 0 for v in rows.values()), rows
    assert "the hand-off, process CPU a start" in done.stdout


def test_percall_compiled_edits_apply_to_the_committed_tree(tmp_path: Path) -> None:
    from benchmarks.percall_compiled import HOT_MODULES, _export

    _export(tmp_path)  # raises SystemExit naming the edit that no longer applies
    for module in HOT_MODULES:
        assert (tmp_path / module).is_file(), module
    assert "self._spawner_thread" in (tmp_path / "sandbox/_session_cgroup.py").read_text()
