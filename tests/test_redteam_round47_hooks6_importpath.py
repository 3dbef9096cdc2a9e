"""Red team round 47 (hooks6): a Python hook whose interpreter (outside the workspace) imports
from the workspace by its own configuration: a development install (``pip install -e .``:
a ``.pth`` line naming ``<ws>/src``, or setuptools' editable finder mapping a package to
``<ws>/pkg/proj``) made by the operator before the session.

The hook's script was recorded (``.claude/hooks``), its ``import myproj`` resolved nowhere: a
sandboxed command's rewrite of ``src/myproj/__init__.py`` ran on the host through the hook.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from shellrt.permissions.hook_files import compare_hook_files, hook_files


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    top = tmp_path_factory.mktemp("importpath")
    ws, venv = top / "ws", top / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("*/site-packages"))
    (site / "legacy_dev.pth").write_text(f"{ws / 'src'}\n")  # setup.py develop / pip -e (legacy)
    (site / "__editable___proj_finder.py").write_text(f"MAPPING = {{'proj': {str(ws / 'pkg' / 'proj')!r}}}\n")
    (site / "__editable__.proj-1.0.pth").write_text("import __editable___proj_finder\n")
    for module in (ws / "src" / "myproj", ws / "pkg" / "proj"):
        module.mkdir(parents=True)
        (module / "__init__.py").write_text("ok = True\n")
    (ws / ".claude" / "hooks").mkdir(parents=True)
    (ws / ".claude" / "hooks" / "g.py").write_text("import myproj\nimport proj\n")
    return ws, venv


@pytest.mark.parametrize(
    ("planted", "shim"),
    [("src/myproj/__init__.py", False), ("pkg/proj/__init__.py", False), ("src/myproj/__init__.py", True)],
)
def test_the_interpreters_workspace_import_path_is_recorded(
    setup: tuple[Path, Path], planted: str, shim: bool
) -> None:
    """Failed 3 of 3 before: the rewrite kept the hook's record. ``shim``: the interpreter is a
    script that runs the environment's (as a pyenv shim does), so it is asked, not read."""
    ws, venv = setup
    interpreter = venv / "bin" / "python3"
    if shim:
        interpreter = venv.parent / "shims" / "python3"
        interpreter.parent.mkdir(exist_ok=True)
        interpreter.write_text(f'#!/bin/sh\nexec {venv}/bin/python3 "$@"\n')
        interpreter.chmod(0o755)
    hook = f'{interpreter} "$CLAUDE_PROJECT_DIR"/.claude/hooks/g.py'
    before = hook_files(ws, [hook])
    assert not before.problems(), before.problems()
    target = ws / planted
    old = target.read_text()
    target.write_text("import os\nos.system('id')\n")
    try:
        assert compare_hook_files(before, hook_files(ws, [hook])) is not None, f"{planted} not recorded"
    finally:
        target.write_text(old)


def test_an_interpreter_without_workspace_paths_records_nothing_more(setup: tuple[Path, Path]) -> None:
    """Control: this test's own interpreter imports nothing from the workspace."""
    ws, _ = setup
    record = hook_files(ws, [f'{sys.executable} "$CLAUDE_PROJECT_DIR"/.claude/hooks/g.py'])
    assert set(record.dirs) == {".claude/hooks"}, record


def test_an_env_shebang_names_no_workspace_file(tmp_path: Path) -> None:
    """Control: ``#!/usr/bin/env python3`` is found on PATH: no ``python3`` or ``pyvenv.cfg`` at
    the root is recorded (that would record the root's files and stop the hook at any write)."""
    ws = tmp_path / "ws"
    (ws / ".claude" / "hooks").mkdir(parents=True)
    (ws / ".claude" / "hooks" / "g.py").write_text("#!/usr/bin/env python3\nprint('ok')\n")
    (ws / ".claude" / "hooks" / "g.py").chmod(0o755)
    record = hook_files(ws, ['"$CLAUDE_PROJECT_DIR"/.claude/hooks/g.py'])
    assert set(record.files) == {".claude/hooks/g.py"} and set(record.dirs) == {".claude/hooks"}, record
