"""Round 48 (lead, second read of hooks7 and round 47's hooks6): a FIFO where a hook's record reads.

Working out what a hook loads reads files a command can make in the workspace: the ``#!`` line of
a script the hook runs by its path (round 48, hooks7) and a workspace venv's ``.pth`` files and
``pyvenv.cfg`` (round 47, hooks6). Both opened them with a plain ``open``, which waits for a
writer at a FIFO: the record (worked out before every hook runs) never ended, and the hook, the
tool call waiting on it and the session with them hung. Now they read regular files only, without
waiting (`hook_loads._read_regular`, as the script reader did already). Each case runs in a child
with a deadline, so a hang fails the test instead of stopping the run.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

_RECORD = """
import sys
from pathlib import Path
from shellrt.permissions.hook_files import hook_files
record = hook_files(Path(sys.argv[1]), [sys.argv[2]])
print("RECORDED", len(record.files) if hasattr(record, "files") else "?")
"""


def _venv(ws: Path) -> None:
    site = ws / ".venv" / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    site.mkdir(parents=True)
    (ws / ".venv" / "bin").mkdir()
    os.symlink(os.path.realpath(sys.executable), ws / ".venv" / "bin" / "python")
    (ws / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\ninclude-system-site-packages = false\n")
    os.mkfifo(site / "evil.pth")


@pytest.mark.parametrize(
    ("hook", "make"),
    [
        pytest.param("./check.py", lambda ws: os.mkfifo(ws / "check.py"), id="script-fifo"),
        pytest.param(".venv/bin/python -c 'import json'", _venv, id="venv-pth-fifo"),
        pytest.param(
            ".venv/bin/python -c 'import json'",
            lambda ws: (_venv(ws), (ws / ".venv" / "pyvenv.cfg").unlink(), os.mkfifo(ws / ".venv" / "pyvenv.cfg")),
            id="venv-cfg-fifo",
        ),
    ],
)
def test_a_fifo_in_the_workspace_does_not_hang_a_hooks_record(tmp_path: Path, hook: str, make) -> None:  # type: ignore[no-untyped-def]
    ws = tmp_path / "ws"
    ws.mkdir()
    make(ws)
    try:
        done = subprocess.run(
            [sys.executable, "-c", _RECORD, str(ws), hook],
            capture_output=True, text=True, timeout=20, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail(f"working out what `{hook}` loads waited at a FIFO for 20 s")
    assert done.returncode == 0 and "RECORDED" in done.stdout, done.stderr[-2000:]


def test_every_hook_record_reader_goes_through_read_regular() -> None:
    """The class, not the three cases: no module of the hook record calls the builtin ``open`` (a
    new reader of a workspace file would wait at a FIFO again); `hook_read.read_regular` only."""
    found = []
    for path in sorted((ROOT / "shellrt" / "permissions").glob("hook*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "open":
                found.append(f"{path.name}:{node.lineno}")
    assert not found, f"builtin open() in a hook record reader (use hook_read.read_regular): {found}"
