"""Red team round 48 (hooks7): a searching tool (round 47's table: ``pytest``, ``make``…) started
by a wrapper the command planner does not know (``watchexec -- pytest``, ``pipx run pytest``,
``dotenv run -- make``, ``nix develop -c make``, ``hatch fmt``): the wrapper's name was on no list,
so the hook recorded nothing of the tree and a command's ``tests/conftest.py`` kept the record.
5 of 5 kept it before this round.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.permissions.hook_files import WHOLE_WORKSPACE, compare_hook_files, hook_files


@pytest.mark.parametrize(
    "hook",
    [
        "watchexec --postpone -- pytest -q",
        "pipx run pytest -q",
        "dotenv run -- make lint",
        "nix develop -c make lint",
        "hatch fmt",  # every hatch command may build its environment (the project's build hooks)
    ],
)
def test_a_searching_tool_behind_an_unknown_wrapper_records_the_tree(tmp_path: Path, hook: str) -> None:
    ws = tmp_path / "ws"
    (ws / "tests").mkdir(parents=True)
    (ws / "tests" / "test_ok.py").write_text("def test_ok():\n    pass\n")
    before = hook_files(ws, [hook])
    (ws / "tests" / "conftest.py").write_text("import os\nos.system('id')\n")
    assert compare_hook_files(before, hook_files(ws, [hook])) is not None, hook


def test_a_word_that_only_prints_a_tool_name_records_no_tree(tmp_path: Path) -> None:
    """Control: ``echo``/``printf``/``jq``/``grep`` of a tool's name start nothing."""
    ws = tmp_path / "ws"
    ws.mkdir()
    for hook in ("echo run pytest", "printf '%s\\n' make", "jq -r .make", "grep -q pytest log.txt"):
        record = hook_files(ws, [hook])
        assert WHOLE_WORKSPACE not in {*record.files, *record.dirs}, (hook, record)
