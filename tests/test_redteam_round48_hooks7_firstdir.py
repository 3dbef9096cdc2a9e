"""Red team round 48 (hooks7): the directory an interpreter takes code from before any other.

Python puts the cwd first on ``sys.path`` for ``-c``, ``-m`` and standard input, and a script's
own directory for a script. A hook runs at the workspace root. The hook runner sets
``PYTHONSAFEPATH=1`` (round 33), which keeps both off -- but only for Python 3.11 and later
(macOS's ``python3`` is 3.9, Ubuntu 22.04's 3.10), not under ``-E`` (the environment ignored),
and not when the operator's own value is empty (kept). Then ``python3 -E -m json.tool`` imported
a command's ``json/__init__.py`` at the root instead of the standard library's, and ``python3
check.py`` at the root (or ``-c 'import urllib.request'``) a ``http/__init__.py`` written into an
existing ``http/`` directory (``urllib.request`` imports ``http.client``): the record held the
hook's files, the root's own entries and ``.claude/hooks``, never a subdirectory's package. Node,
Ruby, Perl and PHP given code inline read its relative loads from the cwd, unread.

Each Python case first runs the hook's command as the hook runner would (``PYTHONSAFEPATH=1`` or
the operator's empty value; the plant runs: the premise), then asks whether the record saw the
plant. 13 of 14 kept the record before this round (``./old.py``, whose ``#!`` names a
Python 3.9 this host lacks, held there only because round 47 records the tree for an interpreter
that answers nothing).
"""

from __future__ import annotations

import os
import subprocess
import sys
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
    (ws / ".claude" / "hooks" / "check.sh").write_text("python3 -E -m json.tool < /dev/null || true\n")
    (ws / "old.py").write_text("#!/usr/bin/env python3.9\nimport urllib.request\n")
    (ws / "old.py").chmod(0o755)
    (ws / ".claude" / "hooks" / "g.py").write_text("import urllib.request\n")


@pytest.mark.parametrize(
    ("hook", "planted", "safepath"),
    [
        ("python3 -E -m json.tool < /dev/null", "json/__init__.py", "1"),  # -E: PYTHONSAFEPATH ignored
        ("python3 -Ec 'import urllib.request'", "http/__init__.py", "1"),
        ("python3 -E check.py", "http/__init__.py", "1"),  # a script at the root: the root first
        ('python3 -E "$CLAUDE_PROJECT_DIR"/check.py', "http/__init__.py", "1"),  # ... by the variable
        ("echo 'import json' | python3 -E -", "json/__init__.py", "1"),  # standard input
        ("sh .claude/hooks/check.sh", "json/__init__.py", "1"),  # from the hook's shell script
        ("python3 check.py", "http/__init__.py", ""),  # the operator's own empty PYTHONSAFEPATH
        (
            f"{os.path.realpath(sys.executable)} -E -m json.tool < /dev/null",
            "json/__init__.py",
            "1",
        ),  # by path
        ("env -u PYTHONSAFEPATH python3 -m json.tool < /dev/null", "json/__init__.py", "1"),  # unset
        ("PYTHONSAFEPATH= python3 -c 'import json'", "json/__init__.py", "1"),  # emptied by the line
        ("./old.py", "http/__init__.py", None),  # its #! line names Python 3.9
        ("node -e 'require(\"./lib/a\")'", "lib/a.js", None),  # node's inline code (not run here)
        ("ruby -e 'load \"./lib/a.rb\"'", "lib/a.rb", None),
        ("echo 'pytest -q' | sh", "lib/a.rb", None),  # a shell's code on standard input
    ],
)
def test_what_an_interpreter_finds_first_is_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hook: str, planted: str, safepath: str | None
) -> None:
    ws = tmp_path / "ws"
    _project(ws)
    if safepath is not None:
        monkeypatch.setenv("PYTHONSAFEPATH", safepath)
    before = hook_files(ws, [hook])
    target = ws / planted
    target.write_text(f"print({_MARK!r})\n" if planted.endswith(".py") else "// plant\n")
    if safepath is not None:
        done = subprocess.run(
            ["bash", "-c", hook],
            cwd=ws,
            env={"PATH": os.environ["PATH"], "CLAUDE_PROJECT_DIR": str(ws), "PYTHONSAFEPATH": safepath},
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
    """Control: ``-P``/``-I`` keep the cwd off ``sys.path``, and so does the runner's
    ``PYTHONSAFEPATH=1`` for a Python that reads it (this one, by its real name ``python3.1x``:
    the plant does not run); a script in ``.claude/hooks`` has its own directory first (watched
    whole, round 40); ``jq`` takes no code from anywhere."""
    ws = tmp_path / "ws"
    _project(ws)
    python = os.path.realpath(sys.executable)
    (ws / "json" / "__init__.py").write_text(f"print({_MARK!r})\n")
    done = subprocess.run(
        [python, "-m", "json.tool"],
        cwd=ws,
        input="{}",
        env={"PYTHONSAFEPATH": "1"},
        capture_output=True,
        text=True,
    )
    assert _MARK not in done.stdout and done.returncode == 0, (done.stdout, done.stderr)
    (ws / "json" / "__init__.py").unlink()
    for hook in (
        f"{python} -m json.tool",
        f"{python} check.py",
        "python3 -P -m json.tool",
        "python3 -I -c 'import json'",
        "python3 -IPc 'import json'",
        'python3 "$CLAUDE_PROJECT_DIR"/.claude/hooks/g.py',
        "jq -r .tool_name",
        "sh -c 'jq .'",  # a shell's -c string is planned as the hook's line
        f"env PYTHONDONTWRITEBYTECODE=1 {python} -m json.tool",  # a wrapper leaving it as it is
    ):
        record = hook_files(ws, [hook])
        assert WHOLE_WORKSPACE not in {*record.files, *record.dirs}, (hook, record)
        (ws / "json" / "__init__.py").write_text("x = 1\n")
        assert compare_hook_files(record, hook_files(ws, [hook])) is None, hook
        (ws / "json" / "__init__.py").unlink()
