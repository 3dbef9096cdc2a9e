"""Red team round 53 (hooks8): the operator's own hook script outside the workspace was never read.

Rounds 40-51 read a hook script for what it loads and starts from the workspace -- when the script
lay in the workspace. The operator's own script (``~/.claude/hooks/fmt.sh``, Claude Code's common
layout) runs from the workspace root too, and was not read at all: ``sh ~/hooks/t.sh`` running
``python3 -m pytest``, a Python one starting ``pytest`` or putting ``lib`` on ``sys.path``, a node
one starting ``node tools/w.js``: each ran a sandboxed command's plant on the host, and the record
held nothing (4 of 4 failed before). Now such a script is read as a workspace script is
(`hook_files.outside_scripts`); the script itself is the operator's and is not recorded.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from shellrt.permissions.hook_files import WHOLE_WORKSPACE, compare_hook_files, hook_files
from tests.conftest import require

_MARK = "R53-HOOKS8-OUTSIDE"
_PY = sys.executable
_NODE = shutil.which("node") or ""
#: Plants write a marker file (pytest captures what a conftest prints): ``{m}`` is its path.
_PYTEST_PLANT = "open({m!r}, 'w').write('{mark}')\n"
_WORKER_PLANT = "require('fs').writeFileSync({m!r}, '{mark}')\n"
# name -> (script file name, its text, the workspace file a command rewrites, that file's plant)
_CASES = {
    "shell_pytest": (
        "t.sh",
        f'#!/bin/sh\nexec "{_PY}" -m pytest -q -p no:cacheprovider tests\n',
        "tests/conftest.py",
        _PYTEST_PLANT,
    ),
    "python_pytest": (
        "t.py",
        f'import subprocess\nsubprocess.run(["{_PY}", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"])\n',
        "tests/conftest.py",
        _PYTEST_PLANT,
    ),
    "python_sys_path": (
        "g.py",
        'import sys\nsys.path.insert(0, "lib")\nimport plug\n',
        "lib/plug.py",
        _PYTEST_PLANT,
    ),
    "node_child": (
        "n.js",
        "require('child_process').execFileSync('node', ['tools/w.js'], { stdio: 'inherit' });\n",
        "tools/w.js",
        _WORKER_PLANT,
    ),
}


def _workspace(tmp_path: Path) -> tuple[Path, Path]:
    ws, home = tmp_path / "ws", tmp_path / "home"
    for d in (ws / ".claude", ws / "tests", ws / "lib", ws / "tools", home):
        d.mkdir(parents=True)
    (ws / "tests" / "test_a.py").write_text("def test_a():\n    pass\n")
    (ws / "tests" / "conftest.py").write_text("")
    (ws / "lib" / "plug.py").write_text("")
    (ws / "tools" / "w.js").write_text("")
    return ws, home


def _run(hook: str, ws: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", hook],
        cwd=ws,
        env={"PATH": os.environ["PATH"], "CLAUDE_PROJECT_DIR": str(ws), "PYTHONSAFEPATH": "1"},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("name", sorted(_CASES))
def test_a_script_outside_the_workspace_is_read_for_what_it_loads(tmp_path: Path, name: str) -> None:
    script, text, target, plant = _CASES[name]
    if script.endswith(".js"):
        require(bool(_NODE), "node is not installed")
    ws, home = _workspace(tmp_path)
    (home / script).write_text(text)
    program = {"sh": "sh", "py": f"{_PY} -P", "js": _NODE}[script.rsplit(".", 1)[1]]
    hook = f"{program} {home / script}"
    before = hook_files(ws, [hook])
    marker = tmp_path / "marker"
    (ws / target).write_text(plant.format(m=str(marker), mark=_MARK))
    done = _run(hook, ws)
    ran = marker.read_text() if marker.exists() else ""
    assert ran == _MARK, (name, done.stdout[-2000:], done.stderr[-2000:])  # the premise: the host runs it
    assert compare_hook_files(before, hook_files(ws, [hook])) is not None, f"{target} unrecorded: {name}"


def test_a_data_only_script_outside_stays_narrow(tmp_path: Path) -> None:
    """Control: an outside script of ``jq`` and ``echo`` records nothing of the workspace."""
    ws, home = _workspace(tmp_path)
    (home / "d.sh").write_text("#!/bin/sh\njq -r .tool_name\necho done\n")
    record = hook_files(ws, [f"sh {home / 'd.sh'}"])
    assert record.files == {} and record.dirs == {}, record
    (ws / "tests" / "conftest.py").write_text("x = 1\n")
    assert compare_hook_files(record, hook_files(ws, [f"sh {home / 'd.sh'}"])) is None


def test_an_outside_load_chosen_at_run_time_records_the_tree_not_a_refusal(tmp_path: Path) -> None:
    """The operator's script sourcing ``"$HOME/…"`` is not refused (it ran before this round); what
    it loads is not known, so the workspace is recorded whole. A shim's ``exec … "$@"`` passes the
    hook line's own words on: read there, nothing more recorded."""
    ws, home = _workspace(tmp_path)
    (home / "s.sh").write_text('#!/bin/sh\n. "$HOME/.config/hook-lib.sh"\n')
    record = hook_files(ws, [f"sh {home / 's.sh'}"])
    assert not record.problems() and WHOLE_WORKSPACE in record.files, record
    (home / "python3").write_text(f'#!/bin/sh\nexec {_PY} "$@"\n')
    (home / "python3").chmod(0o755)
    (ws / ".claude" / "hooks").mkdir()
    (ws / ".claude" / "hooks" / "g.py").write_text("import json\n")
    shim = hook_files(ws, [f'{home / "python3"} -P "$CLAUDE_PROJECT_DIR"/.claude/hooks/g.py'])
    assert not shim.problems() and WHOLE_WORKSPACE not in {*shim.files, *shim.dirs}, shim


@pytest.mark.parametrize("where", ["outside", "workspace"])
def test_an_outside_helper_a_hook_script_sources_is_read(tmp_path: Path, where: str) -> None:
    """``. "$(dirname "$0")/common.sh"`` in the operator's script, or ``. ~/hooks/common.sh`` in a
    workspace hook script: the helper's ``pytest -q`` (which runs ``tests/conftest.py``, as the real
    run above shows) was never read (2 of 2 failed before)."""
    ws, home = _workspace(tmp_path)
    (home / "common.sh").write_text("pytest -q\n")
    if where == "outside":
        (home / "main.sh").write_text('#!/bin/sh\n. "$(dirname "$0")/common.sh"\n')
        hook = f"sh {home / 'main.sh'}"
    else:
        (ws / ".claude" / "hooks").mkdir()
        (ws / ".claude" / "hooks" / "x.sh").write_text(f". {home / 'common.sh'}\n")
        hook = 'sh "$CLAUDE_PROJECT_DIR"/.claude/hooks/x.sh'
    before = hook_files(ws, [hook])
    (ws / "tests" / "conftest.py").write_text("import os\nos.system('id')\n")
    assert compare_hook_files(before, hook_files(ws, [hook])) is not None, f"conftest.py unrecorded: {where}"
