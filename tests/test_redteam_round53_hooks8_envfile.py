"""Red team round 53 (hooks8): an environment file the hook's node reads itself.

``node --env-file=.env .claude/hooks/g.js`` takes ``NODE_OPTIONS`` from the workspace's ``.env``
(node 20.6+) before the hook's first line; the record held the script alone (``.env`` has no
``/``, so the option's value was read as no path). A command's ``NODE_OPTIONS=--require
./lib/pre.js`` in ``.env``, or its rewrite of the ``lib/pre.js`` a trusted ``.env`` names, ran on
the host; so did a child of a script that calls ``process.loadEnvFile()`` (3 of 3 failed before).
Now the file is recorded and its lines read as the line's own assignments are
(`hook_env_files`); a script loading one at run time records the tree.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from shellrt.permissions.hook_files import WHOLE_WORKSPACE, compare_hook_files, hook_files
from tests._hook_on_host import run_hook_on_host
from tests.conftest import require

_MARK = "R53-HOOKS8-ENVFILE"
_NODE = shutil.which("node") or ""
_PLANT = f"console.log('{_MARK}')\n"
_REQUIRE = "NODE_OPTIONS=--require ./lib/pre.js\n"
# name -> (hook line, hook script text, .env before, file rewritten, its new text)
_CASES = {
    "env_planted": ("--env-file=.env", "", "X=1\n", ".env", _REQUIRE),
    "named_module_rewritten": ("--env-file .env", "", _REQUIRE, "lib/pre.js", _PLANT),
    "load_env_file_child": (
        "",
        "process.loadEnvFile();\nrequire('child_process').execFileSync('node', [{child!r}], { stdio: 'inherit' });\n",
        _REQUIRE,
        "lib/pre.js",
        _PLANT,
    ),
}


def _workspace(tmp_path: Path, script: str, env: str) -> Path:
    ws = tmp_path / "ws"
    (ws / ".claude" / "hooks").mkdir(parents=True)
    (ws / "lib").mkdir()
    (ws / "lib" / "pre.js").write_text("")
    (ws / ".env").write_text(env)
    (ws / ".claude" / "hooks" / "g.js").write_text(script or "console.log('hook')\n")
    return ws


@pytest.mark.parametrize("name", sorted(_CASES))
def test_what_an_env_file_names_is_recorded(tmp_path: Path, name: str) -> None:
    require(bool(_NODE), "node is not installed")
    option, script, env, target, text = _CASES[name]
    child = tmp_path / "child.js"  # the operator's own child script, outside the workspace
    child.write_text("0\n")
    ws = _workspace(tmp_path, script.replace("{child!r}", repr(str(child))), env)
    hook = f'{_NODE} {option} "$CLAUDE_PROJECT_DIR"/.claude/hooks/g.js'
    before = hook_files(ws, [hook])
    (ws / target).write_text(text)
    if target == ".env":
        (ws / "lib" / "pre.js").write_text(_PLANT)
    run_hook_on_host(ws, hook, _MARK, name)
    assert compare_hook_files(before, hook_files(ws, [hook])) is not None, f"{target} unrecorded: {name}"


def test_a_plain_env_file_records_itself_not_the_tree(tmp_path: Path) -> None:
    """Control: an ``.env`` of plain values records itself; the rest of the workspace stays out."""
    ws = _workspace(tmp_path, "", "LANG=C.UTF-8\nTZ=UTC\n")
    (ws / "src").mkdir()
    hook = 'node --env-file=.env "$CLAUDE_PROJECT_DIR"/.claude/hooks/g.js'
    record = hook_files(ws, [hook])
    assert ".env" in record.files and WHOLE_WORKSPACE not in {*record.files, *record.dirs}, record
    (ws / "src" / "a.js").write_text("x\n")
    assert compare_hook_files(record, hook_files(ws, [hook])) is None


def test_an_env_file_that_cannot_be_read_records_the_tree(tmp_path: Path) -> None:
    """A quoted value with an escape (``"a\\nb"``) is read differently by each reader: the tree."""
    ws = _workspace(tmp_path, "", 'NODE_OPTIONS="--require \\x2e/lib/pre.js"\n')
    record = hook_files(ws, ['node --env-file=.env "$CLAUDE_PROJECT_DIR"/.claude/hooks/g.js'])
    assert WHOLE_WORKSPACE in record.files, record


def test_a_script_past_the_read_limit_counts_as_loading_an_env_file(tmp_path: Path) -> None:
    """A script whose ``loadEnvFile()`` lies past the 1 MiB read was judged by its first MiB alone
    (fail open); now a script larger than the read counts as loading one, as an unread Perl/Ruby/PHP
    script counts as loading (`hook_loads_other.loads_by_path`)."""
    from shellrt.permissions.hook_env_files import loads_env_at_run_time

    small = tmp_path / "small.js"
    small.write_text("console.log(1)\n")
    big = tmp_path / "big.js"
    big.write_text("// pad\n" * 200_000 + "process.loadEnvFile()\n")
    assert loads_env_at_run_time(str(small)) is False  # control
    assert loads_env_at_run_time(str(big)) is True
