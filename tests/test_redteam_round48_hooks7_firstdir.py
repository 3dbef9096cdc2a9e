"""Red team round 48 (hooks7): the directory an interpreter takes code from before any other.

Python puts the cwd first on ``sys.path`` for ``-c``, ``-m`` and standard input, and a script's
own directory for a script. A hook runs at the workspace root, so ``python3 -m json.tool`` (round
47's control: "records no tree") imported a command's ``json/__init__.py`` there instead of the
standard library's, and ``python3 check.py`` at the root (or ``python3 -c 'import
urllib.request'``) a ``http/__init__.py`` written into an existing ``http/`` directory (the
standard library's ``urllib.request`` imports ``http.client``): the record held the hook's
files, the root's own entries and ``.claude/hooks``, never a subdirectory's package. Node, Ruby,
Perl and PHP given code inline read its relative loads from the cwd, unread.

Each case first runs the hook's command for real (the plant runs: the premise), then asks
whether the record saw the plant. 8 of 8 kept the record before this round.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from shellrt.permissions.hook_files import WHOLE_WORKSPACE, compare_hook_files, hook_files

_MARK = "R48-HOOKS7-PLANT"


def _project(ws: Path) -> None:
    for name in ("http", "json", "lib", ".claude/hooks"):
        (ws / name).mkdir(parents=True)
    (ws / "http" / "get.http").write_text("GET https://example.invalid/\n")  # a REST client's requests
    (ws / "json" / "fixture.json").write_text("{}\n")
    (ws / "lib" / "a.js").write_text("module.exports = 1\n")
    (ws / "check.py").write_text("import urllib.request\n")
    (ws / ".claude" / "hooks" / "check.sh").write_text("python3 -m json.tool < /dev/null || true\n")
    (ws / ".claude" / "hooks" / "g.py").write_text("import urllib.request\n")


@pytest.mark.parametrize(
    ("hook", "planted", "runs"),
    [
        ("python3 -m json.tool < /dev/null", "json/__init__.py", True),  # -m: the cwd first
        ("python3 -c 'import urllib.request'", "http/__init__.py", True),  # -c: the cwd first
        ("python3 check.py", "http/__init__.py", True),  # a script at the root: the root first
        ('python3 "$CLAUDE_PROJECT_DIR"/check.py', "http/__init__.py", True),  # ... by the variable
        ("echo 'import json' | python3 -", "json/__init__.py", True),  # standard input
        ("sh .claude/hooks/check.sh", "json/__init__.py", True),  # from the hook's shell script
        ("node -e 'require(\"./lib/a\")'", "lib/a.js", False),  # node's inline code (not run here)
        ("ruby -e 'load \"./lib/a.rb\"'", "lib/a.rb", False),
    ],
)
def test_what_an_interpreter_finds_first_is_recorded(
    tmp_path: Path, hook: str, planted: str, runs: bool
) -> None:
    ws = tmp_path / "ws"
    _project(ws)
    before = hook_files(ws, [hook])
    target = ws / planted
    target.write_text(f"print({_MARK!r})\n" if planted.endswith(".py") else "// plant\n")
    if runs:
        done = subprocess.run(
            ["bash", "-c", hook],
            cwd=ws,
            env={"PATH": "/usr/bin:/bin", "CLAUDE_PROJECT_DIR": str(ws)},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert _MARK in done.stdout, (hook, done.stdout, done.stderr)  # the premise: Python runs it
    assert compare_hook_files(before, hook_files(ws, [hook])) is not None, (
        f"{planted} not recorded for {hook}"
    )


def test_a_safe_path_or_a_hooks_directory_script_stays_narrow(tmp_path: Path) -> None:
    """Control: ``-P``/``-I`` keep the cwd off ``sys.path``; a script in ``.claude/hooks`` has its
    own directory first (watched whole, round 40); ``jq`` takes no code from anywhere."""
    ws = tmp_path / "ws"
    _project(ws)
    for hook in (
        "python3 -P -m json.tool",
        "python3 -I -c 'import json'",
        "python3 -IPc 'import json'",
        'python3 "$CLAUDE_PROJECT_DIR"/.claude/hooks/g.py',
        "jq -r .tool_name",
    ):
        record = hook_files(ws, [hook])
        assert WHOLE_WORKSPACE not in {*record.files, *record.dirs}, (hook, record)
        (ws / "json" / "__init__.py").write_text("x = 1\n")
        assert compare_hook_files(record, hook_files(ws, [hook])) is None, hook
        (ws / "json" / "__init__.py").unlink()
