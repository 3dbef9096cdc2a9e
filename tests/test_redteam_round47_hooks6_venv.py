"""Red team round 47 (hooks6): a hook run by a Python interpreter that lives in the workspace (a
virtual environment made with ``--copies``, or named by a script's ``#!`` line).

Python reads its environment at start-up from around its own binary: ``pyvenv.cfg`` beside it or
one directory up (``home``, ``include-system-site-packages``), and every ``.pth`` file of that
environment's ``site-packages`` (a line starting with ``import`` runs), ``sitecustomize`` and the
packages the hook imports. Only the binary and its ``bin/`` were recorded: a sandboxed command's
``site-packages/x.pth`` ran on the host through the operator's hook.
"""

from __future__ import annotations

import glob
import subprocess
import sys
from pathlib import Path

import pytest

from shellrt.permissions.hook_files import compare_hook_files, hook_files


@pytest.fixture(scope="module")
def venv_ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("venv") / "ws"
    ws.mkdir()
    subprocess.run([sys.executable, "-m", "venv", "--copies", "--without-pip", str(ws / ".venv")], check=True)
    (ws / ".claude" / "hooks").mkdir(parents=True)
    (ws / ".claude" / "hooks" / "g.py").write_text("print('ok')\n")
    (ws / ".claude" / "hooks" / "direct.py").write_text(f"#!{ws}/.venv/bin/python3\nprint('ok')\n")
    (ws / ".claude" / "hooks" / "direct.py").chmod(0o755)
    return ws


@pytest.mark.parametrize(
    ("hook", "planted"),
    [
        ('"$CLAUDE_PROJECT_DIR"/.venv/bin/python3 "$CLAUDE_PROJECT_DIR"/.claude/hooks/g.py', "SP/evil.pth"),
        ('"$CLAUDE_PROJECT_DIR"/.venv/bin/python3 "$CLAUDE_PROJECT_DIR"/.claude/hooks/g.py', "SP/sitecustomize.py"),
        ('"$CLAUDE_PROJECT_DIR"/.venv/bin/python3 "$CLAUDE_PROJECT_DIR"/.claude/hooks/g.py', ".venv/pyvenv.cfg"),
        ('"$CLAUDE_PROJECT_DIR"/.claude/hooks/direct.py', "SP/evil.pth"),  # the #! line's interpreter
    ],
)
def test_a_workspace_interpreters_environment_is_recorded(venv_ws: Path, hook: str, planted: str) -> None:
    """Failed 4 of 4 before: each plant kept the hook's record."""
    site = glob.glob(str(venv_ws / ".venv" / "lib" / "*" / "site-packages"))[0]
    target = Path(planted.replace("SP", site, 1)) if planted.startswith("SP/") else venv_ws / planted
    before = hook_files(venv_ws, [hook])
    assert not before.problems(), before.problems()
    old = target.read_bytes() if target.exists() else None
    target.write_text("import os; os.system('id')\n" if target.suffix != ".cfg" else "home = /tmp/evil\n")
    try:
        assert compare_hook_files(before, hook_files(venv_ws, [hook])) is not None, f"{planted} not recorded"
    finally:
        if old is None:
            target.unlink()
        else:
            target.write_bytes(old)


def test_a_pyvenv_cfg_planted_beside_a_workspace_python_is_seen(tmp_path: Path) -> None:
    """A bare interpreter copied into the workspace (no environment): a ``pyvenv.cfg`` planted
    beside it, or one directory up, makes one (its ``home`` chooses the standard library)."""
    ws = tmp_path / "ws"
    (ws / "tools" / "bin").mkdir(parents=True)
    (ws / "tools" / "bin" / "python3").write_bytes(b"\x7fELF not really\n")
    (ws / "tools" / "bin" / "python3").chmod(0o755)
    (ws / "g.py").write_text("print('ok')\n")
    hook = '"$CLAUDE_PROJECT_DIR"/tools/bin/python3 "$CLAUDE_PROJECT_DIR"/g.py'
    before = hook_files(ws, [hook])
    (ws / "tools" / "pyvenv.cfg").write_text("home = /tmp/evil\n")
    assert compare_hook_files(before, hook_files(ws, [hook])) is not None
