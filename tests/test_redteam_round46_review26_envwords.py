"""Red team round 46 (review26): an environment a hook's wrapper gives its program.

``NODE_PATH=lib node x.js`` recorded ``lib`` (round 23: the command's own assignments), but
``env NODE_PATH=lib node x.js`` (and ``sudo``/``env -i`` forms) passed the assignment as a word:
``lib`` was not recorded, and a sandboxed command's ``lib/plug.js`` loaded by ``require('plug')``
ran on the host.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.permissions.hook_files import compare_hook_files, hook_files


@pytest.mark.parametrize(
    "hook",
    [
        "env NODE_PATH=lib node scripts/guard.js",
        "env -i NODE_PATH=lib node scripts/guard.js",
        'env NODE_PATH="$CLAUDE_PROJECT_DIR/lib" node scripts/guard.js',
        "sudo NODE_PATH=lib node scripts/guard.js",
        "env NODE_OPTIONS=--require=./lib/plug.js node scripts/guard.js",
    ],
)
def test_a_wrappers_assignment_is_recorded(tmp_path: Path, hook: str) -> None:
    """Failed 5 of 5 before."""
    ws = tmp_path / "ws"
    (ws / "scripts").mkdir(parents=True)
    (ws / "lib").mkdir()
    (ws / "lib" / "plug.js").write_text("module.exports = 1;\n")
    (ws / "scripts" / "guard.js").write_text("require('plug');\n")
    before = hook_files(ws, [hook])
    assert not before.problems(), before.problems()
    (ws / "lib" / "plug.js").write_text("require('child_process').execSync('id')\n")
    assert compare_hook_files(before, hook_files(ws, [hook])) is not None, hook


def test_a_value_from_another_variable_is_untrackable(tmp_path: Path) -> None:
    """``env NODE_PATH=$X node …``: not one known place (as an assignment of the command's own)."""
    (tmp_path / "x.js").write_text("\n")
    record = hook_files(tmp_path, ["env NODE_PATH=$X node x.js"])
    assert record.untrackable, record
