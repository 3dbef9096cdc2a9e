"""Red team round 49 (hooks8): what round 48 left unread, read or failed closed.

- A Python hook script that starts a Python child with its own environment
  (``subprocess.run([...], env={"PATH": …})``) drops the runner's ``PYTHONSAFEPATH``: the child
  run with ``-m`` at the workspace root imports a command's ``json/__init__.py`` there. The
  record resolved the child as if the runner's value held (round 48's Left).
- A hook line chosen at run time (``$(which pytest) -q``, ``"$TOOL" -q``) was untrackable and
  watched ``.claude/hooks`` alone: a searching tool named so ran a command's ``tests/conftest.py``
  (round 48's Left; round 48 probed it). Now an untrackable line records the tree.

Both failed before (the first runs the hook as the runner does first: the premise).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from shellrt.permissions.hook_files import WHOLE_WORKSPACE, compare_hook_files, hook_files

_MARK = "R49-HOOKS8-CHILD"
_PY = shutil.which("python3.11") or ""


@pytest.mark.skipif(not _PY, reason="needs python3.11 on PATH (a name saying 3.11+)")
@pytest.mark.parametrize("env", ['{"PATH": os.environ["PATH"]}', "clean", "{**os.environ}"])
def test_a_python_child_with_its_own_environment_is_resolved_without_safe_path(
    tmp_path: Path, env: str
) -> None:
    ws = tmp_path / "ws"
    (ws / ".claude" / "hooks").mkdir(parents=True)
    (ws / "json").mkdir()
    (ws / "json" / "data.json").write_text("{}\n")
    (ws / ".claude" / "hooks" / "g.py").write_text(
        "import os, subprocess\n"
        'clean = {"PATH": os.environ["PATH"]}\n'
        f"subprocess.run([{_PY!r}, '-m', 'json.tool'], input=b'{{}}', env={env}, check=False)\n"
    )
    hook = f'{_PY} "$CLAUDE_PROJECT_DIR"/.claude/hooks/g.py'
    before = hook_files(ws, [hook])
    (ws / "json" / "__init__.py").write_text(f"print({_MARK!r})\n")
    done = subprocess.run(
        ["bash", "-c", hook],
        cwd=ws,
        env={"PATH": os.environ["PATH"], "CLAUDE_PROJECT_DIR": str(ws), "PYTHONSAFEPATH": "1"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    verdict = compare_hook_files(before, hook_files(ws, [hook]))
    if env.startswith("{**"):  # control: the runner's environment passed on, PYTHONSAFEPATH with it
        assert _MARK not in done.stdout, (done.stdout, done.stderr)
        assert verdict is None, verdict
        return
    assert _MARK in done.stdout, (done.stdout, done.stderr)  # the premise: the child runs the plant
    assert verdict is not None, "json/__init__.py not recorded for a child with its own environment"


@pytest.mark.skipif(not _PY or not shutil.which("node"), reason="needs python3.11 and node on PATH")
def test_a_node_hooks_python_child_with_its_own_environment_is_resolved_so(tmp_path: Path) -> None:
    """The same through node's ``child_process`` (``{env: {PATH: …}}``)."""
    ws = tmp_path / "ws"
    (ws / ".claude" / "hooks").mkdir(parents=True)
    (ws / "json").mkdir()
    (ws / ".claude" / "hooks" / "g.js").write_text(
        "const {spawnSync} = require('child_process');\n"
        f"process.stdout.write(spawnSync({_PY!r}, ['-m', 'json.tool'], "
        "{input: '{}', env: {PATH: process.env.PATH}}).stdout);\n"
    )
    hook = 'node "$CLAUDE_PROJECT_DIR"/.claude/hooks/g.js'
    before = hook_files(ws, [hook])
    (ws / "json" / "__init__.py").write_text(f"print({_MARK!r})\n")
    done = subprocess.run(
        ["bash", "-c", hook],
        cwd=ws,
        env={"PATH": os.environ["PATH"], "CLAUDE_PROJECT_DIR": str(ws), "PYTHONSAFEPATH": "1"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert _MARK in done.stdout, (done.stdout, done.stderr)  # the premise: the child runs the plant
    assert compare_hook_files(before, hook_files(ws, [hook])) is not None


@pytest.mark.parametrize("hook", ["$(which pytest) -q", '"$TOOL" -q', "cd tests && pytest -q"])
def test_an_untrackable_line_records_the_tree(tmp_path: Path, hook: str) -> None:
    ws = tmp_path / "ws"
    (ws / "tests").mkdir(parents=True)
    (ws / "tests" / "test_a.py").write_text("def test_a():\n    pass\n")
    before = hook_files(ws, [hook])
    assert before.untrackable, before  # still said (the settings' reviewer reads why)
    assert WHOLE_WORKSPACE in before.files, before
    (ws / "tests" / "conftest.py").write_text(f"print({_MARK!r})\n")
    assert compare_hook_files(before, hook_files(ws, [hook])) is not None, hook


@pytest.mark.skipif(not shutil.which("npx"), reason="needs npx on PATH")
@pytest.mark.parametrize("cwd", ["'web'", "os.path.join(os.getcwd(), 'web')", "where"])
def test_a_child_started_in_another_directory_is_resolved_there(tmp_path: Path, cwd: str) -> None:
    """``subprocess.run(["npx", "--no-install", "fmt"], cwd="web")`` in a Python hook script runs
    ``web/node_modules/.bin/fmt``: the record resolved the child from the root (its
    ``node_modules/.bin/fmt``), never ``web/`` (a directory chosen at run time: the tree)."""
    ws = tmp_path / "ws"
    (ws / ".claude" / "hooks").mkdir(parents=True)
    (ws / "web" / "node_modules" / ".bin").mkdir(parents=True)
    (ws / "web" / "package.json").write_text('{"name": "web"}\n')
    (ws / ".claude" / "hooks" / "g.py").write_text(
        "import os, subprocess, sys\n"
        "where = sys.argv[0] and 'web'\n"
        f"subprocess.run(['npx', '--no-install', 'fmt'], cwd={cwd}, check=False)\n"
    )
    hook = 'python3 -I "$CLAUDE_PROJECT_DIR"/.claude/hooks/g.py'
    before = hook_files(ws, [hook])
    fmt = ws / "web" / "node_modules" / ".bin" / "fmt"
    fmt.write_text(f"#!/bin/sh\necho {_MARK}\n")
    fmt.chmod(0o755)
    if cwd == "'web'":  # the premise, once (npx starts slowly): npx runs the plant
        done = subprocess.run(
            ["bash", "-c", hook],
            cwd=ws,
            env={"PATH": os.environ["PATH"], "CLAUDE_PROJECT_DIR": str(ws), "HOME": str(tmp_path)},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert _MARK in done.stdout, (done.stdout, done.stderr)
    assert compare_hook_files(before, hook_files(ws, [hook])) is not None, cwd
