"""Red team round 50 (hooks9): a ``python -m`` command stopped the reading of its hook line.

``hook_files._part_paths`` returned at a ``-m`` word and ``_command_paths`` returned with it, and
since round 49 a ``-m`` line is the one untrackable kind that does not record the tree (its search
is read instead). So whatever stood after it went unread: the module's own operands
(``python3 -P -m cProfile tools/x.py`` runs ``tools/x.py``) and every later command of the line
(``… -m platform && bash tools/run.sh``, ``… && pytest``, whose ``tests/conftest.py`` is found by
search). Each case runs the hook as the runner does first (the premise: the plant runs on the
host), then asks whether the record saw the plant. All failed before.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from shellrt.permissions.hook_files import compare_hook_files, hook_files

_MARK = "R50-HOOKS9-MODULE"
_PY = shutil.which("python3.11") or shutil.which("python3") or "python3"


@pytest.mark.parametrize(
    ("hook", "planted", "plant"),
    [
        (
            f"{_PY} -P -m cProfile tools/x.py > /dev/null",
            "tools/x.py",
            f"import sys; sys.stderr.write({_MARK!r})\n",
        ),
        (f"{_PY} -I -m platform > /dev/null && bash tools/run.sh", "tools/run.sh", f"echo {_MARK} >&2\n"),
    ],
)
def test_what_follows_a_module_run_is_read(tmp_path: Path, hook: str, planted: str, plant: str) -> None:
    ws = tmp_path / "ws"
    for name in ("tools", "tests", ".claude/hooks"):
        (ws / name).mkdir(parents=True)
    (ws / "tests" / "test_a.py").write_text("def test_a():\n    pass\n")
    (ws / planted).write_text("pass\n" if planted.endswith(".py") else "true\n")
    before = hook_files(ws, [hook])
    (ws / planted).write_text(plant)
    done = subprocess.run(
        ["bash", "-c", hook],
        cwd=ws,
        env={"PATH": os.environ["PATH"], "CLAUDE_PROJECT_DIR": str(ws), "PYTHONSAFEPATH": "1"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert _MARK in done.stderr + done.stdout, (hook, done.stdout, done.stderr)  # the premise
    assert compare_hook_files(before, hook_files(ws, [hook])) is not None, f"{planted} unrecorded: {hook}"


def test_a_tree_loader_after_a_module_run_records_the_tree(tmp_path: Path) -> None:
    """``… -m platform && pytest -q``: pytest imports every ``conftest.py`` it finds (round 47), so
    the line records the tree; before, reading stopped at ``-m`` (the premise is round 47's)."""
    ws = tmp_path / "ws"
    (ws / ".claude" / "hooks").mkdir(parents=True)
    record = hook_files(ws, [f"{_PY} -I -m platform > /dev/null && pytest -q"])
    assert "." in record.files, record
