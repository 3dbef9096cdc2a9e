"""Red team round 50 (hooks9): the runner's ``PYTHONSAFEPATH`` dropped in one command, Python run in another.

Round 49 read an ``env`` prefix's ``-u PYTHONSAFEPATH`` only when ``env``'s own program was
Python, and an assignment of it only on the part that runs Python. The planner plans a wrapper's
operand as a part of its own, without the wrapper's assignments: ``PYTHONSAFEPATH= nice python3.11
-m json.tool`` and ``nice env -u PYTHONSAFEPATH python3.11 -m json.tool`` were read as if the
runner's value held, and so were ``unset PYTHONSAFEPATH; python3.11 -m …``, a shell hook script
that unsets it before running Python, a Python hook script that pops it from ``os.environ`` and
starts a child without ``env=``, and a node one that deletes it from ``process.env``. Each ran a
command's ``json/__init__.py`` (planted in an existing ``json/`` data directory) on the host,
unrecorded. Each case runs the hook as the runner does first (the premise). All failed before.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from shellrt.permissions.hook_files import compare_hook_files, hook_files

_MARK = "R50-HOOKS9-SAFEPATH"
_PY = shutil.which("python3.11") or ""  # a name saying 3.11: the runner's PYTHONSAFEPATH believed
_NODE = shutil.which("node") or ""

pytestmark = pytest.mark.skipif(not _PY, reason="needs python3.11 on PATH (a name saying 3.11+)")

_SCRIPTS = {
    ".claude/hooks/unset.sh": f"#!/bin/bash\nunset PYTHONSAFEPATH\n{_PY} -m json.tool data.json\n",
    ".claude/hooks/pop.py": (
        "import os, subprocess\n"
        'os.environ.pop("PYTHONSAFEPATH", None)\n'
        f'subprocess.run([{_PY!r}, "-m", "json.tool", "data.json"])\n'
    ),
    ".claude/hooks/del.js": (
        'const { spawnSync } = require("child_process");\n'
        "delete process.env.PYTHONSAFEPATH;\n"
        f'spawnSync({_PY!r}, ["-m", "json.tool", "data.json"], {{ stdio: "inherit" }});\n'
    ),
}


def _project(ws: Path) -> None:
    (ws / "json").mkdir(parents=True)  # a data directory the project already has
    (ws / "json" / "fixture.json").write_text("{}\n")
    (ws / "data.json").write_text("{}\n")
    for rel, text in _SCRIPTS.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
        (ws / rel).chmod(0o755)


@pytest.mark.parametrize(
    "hook",
    [
        f"PYTHONSAFEPATH= nice {_PY} -m json.tool data.json",  # the assignment is the wrapper's
        f"nice env -u PYTHONSAFEPATH {_PY} -m json.tool data.json",  # env itself wrapped
        f"env -u PYTHONSAFEPATH nice {_PY} -m json.tool data.json",  # env's program a wrapper
        f"unset PYTHONSAFEPATH; {_PY} -m json.tool data.json",  # another command of the line
        'bash "$CLAUDE_PROJECT_DIR"/.claude/hooks/unset.sh',  # a shell hook script
        f'{_PY} -I "$CLAUDE_PROJECT_DIR"/.claude/hooks/pop.py',  # os.environ.pop, then no env=
        pytest.param(
            f'{_NODE} "$CLAUDE_PROJECT_DIR"/.claude/hooks/del.js',
            marks=pytest.mark.skipif(not _NODE, reason="needs node"),
        ),
    ],
)
def test_a_dropped_safe_path_is_read_for_the_whole_line(tmp_path: Path, hook: str) -> None:
    ws = tmp_path / "ws"
    _project(ws)
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
    assert _MARK in done.stdout, (hook, done.stdout, done.stderr)  # the premise: the host runs it
    assert compare_hook_files(before, hook_files(ws, [hook])) is not None, (
        f"json/__init__.py unrecorded: {hook}"
    )


def test_a_line_that_keeps_safe_path_stays_narrow(tmp_path: Path) -> None:
    """Control: nothing in the line drops it; the plant does not run and the tree is not recorded."""
    ws = tmp_path / "ws"
    _project(ws)
    hook = f"nice {_PY} -m json.tool data.json"
    record = hook_files(ws, [hook])
    assert "." not in record.files, record
    (ws / "json" / "__init__.py").write_text(f"print({_MARK!r})\n")
    done = subprocess.run(
        ["bash", "-c", hook],
        cwd=ws,
        env={"PATH": os.environ["PATH"], "PYTHONSAFEPATH": "1"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert _MARK not in done.stdout and done.returncode == 0, (done.stdout, done.stderr)
    assert compare_hook_files(record, hook_files(ws, [hook])) is None


def _older_python() -> str | None:
    """The real binary of an older Python (a pyenv shim picks its program by the name it is run as)."""
    import glob

    for name in ("python3.10", "python3.9", "python3.8"):
        found = [
            shutil.which(name) or "",
            *sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/*/bin/{name}"))),
        ]
        for candidate in filter(None, found):
            done = subprocess.run(
                [candidate, "-c", "import sys; print(sys.executable)"],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            real = os.path.realpath(done.stdout.strip()) if done.returncode == 0 else ""
            if os.path.basename(real) == name:
                return real
    return None


def test_a_link_named_python311_to_an_older_python_is_not_believed(tmp_path: Path) -> None:
    """Round 49's Left: the version was read from the name the hook gives first. A ``python3.11``
    that is a link to ``python3.10`` ignores ``PYTHONSAFEPATH`` and imports the root's ``json``."""
    older = _older_python()
    if older is None:
        pytest.skip("needs a python3.10 (or older) on PATH")
    ws = tmp_path / "ws"
    _project(ws)
    link = tmp_path / "bin" / "python3.11"
    link.parent.mkdir()
    link.symlink_to(os.path.realpath(older))
    hook = f"{link} -m json.tool data.json"
    before = hook_files(ws, [hook])
    (ws / "json" / "__init__.py").write_text(f"print({_MARK!r})\n")
    done = subprocess.run(
        ["bash", "-c", hook],
        cwd=ws,
        env={"PATH": os.environ["PATH"], "PYTHONSAFEPATH": "1"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert _MARK in done.stdout, (done.stdout, done.stderr)  # the premise: 3.10 ignores it
    assert compare_hook_files(before, hook_files(ws, [hook])) is not None
