"""Red team round 50 (hooks9): what a Python or node hook script starts, read as a hook line is.

Round 47 read the command lines a hook script starts for what their tools find by search only:
the files those lines name were never recorded (``subprocess.run(["python3", "tools/w.py"])``,
``execSync("bash tools/w.sh")``). Round 49's Left: ``os.execv``/``os.posix_spawn``/``os.spawnve``
were not read at all, node's ``cwd`` option was not read, and neither were ``fork``/``new
Worker`` (node runs a module by a path) nor a script's own ``os.chdir``/``process.chdir``. Each
case runs the hook as the runner does first (the premise: a command's plant runs on the host),
then asks whether the record saw the plant. All failed before.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from shellrt.permissions.hook_files import compare_hook_files, hook_files

_MARK = "R50-HOOKS9-CHILD"
_PY = shutil.which("python3.11") or ""
_NODE = shutil.which("node") or ""

pytestmark = pytest.mark.skipif(not (_PY and _NODE), reason="needs python3.11 and node on PATH")

_PY_PLANT = ("tools/w.py", f"print({_MARK!r})\n")
_SH_PLANT = ("tools/w.sh", f"echo {_MARK}\n")
_JS_PLANT = ("tools/w.js", f"console.log({_MARK!r});\n")
_BIN_PLANT = ("web/node_modules/.bin/fmt", f"#!/bin/sh\necho {_MARK}\n")
_JSON_PLANT = ("json/__init__.py", f"print({_MARK!r})\n")

_CASES = {
    "run.py": (f"import subprocess\nsubprocess.run([{_PY!r}, 'tools/w.py'])\n", _PY_PLANT),
    "shell.py": ("import subprocess\nsubprocess.run('bash tools/w.sh', shell=True)\n", _SH_PLANT),
    "execv.py": (f"import os\nos.execv({_PY!r}, ['python3', 'tools/w.py'])\n", _PY_PLANT),
    "posix.py": (
        f"import os\npid = os.posix_spawn({_PY!r}, ['python3', 'tools/w.py'], os.environ)\nos.waitpid(pid, 0)\n",
        _PY_PLANT,
    ),
    "spawnve.py": (
        f"import os\nos.spawnve(os.P_WAIT, {_PY!r}, ['python3', '-m', 'json.tool', 'd.json'], {{'PATH': '/usr/bin'}})\n",
        _JSON_PLANT,
    ),
    "chdir.py": (
        "import os, subprocess\nos.chdir('web')\nsubprocess.run(['node_modules/.bin/fmt'])\n",
        _BIN_PLANT,
    ),
    "spawn.js": (
        "require('child_process').spawnSync('bash', ['tools/w.sh'], { stdio: 'inherit' });\n",
        _SH_PLANT,
    ),
    "fork.js": ("require('child_process').fork('./tools/w.js');\n", _JS_PLANT),
    "worker.js": ("const { Worker } = require('worker_threads');\nnew Worker('./tools/w.js');\n", _JS_PLANT),
    "cwd.js": (
        "require('child_process').spawnSync('node_modules/.bin/fmt', [], { cwd: 'web', stdio: 'inherit' });\n",
        _BIN_PLANT,
    ),
}


@pytest.mark.parametrize("script", sorted(_CASES))
def test_what_a_hook_script_starts_is_recorded(tmp_path: Path, script: str) -> None:
    source, (planted, plant) = _CASES[script]
    ws = tmp_path / "ws"
    for name in (".claude/hooks", "tools", "json", "web/node_modules/.bin"):
        (ws / name).mkdir(parents=True)
    (ws / "d.json").write_text("{}\n")
    (ws / "json" / "data.json").write_text("{}\n")
    (ws / "web" / "package.json").write_text('{"name": "web", "version": "1.0.0"}\n')
    (ws / ".claude" / "hooks" / script).write_text(source)
    if planted != _JSON_PLANT[0]:
        (ws / planted).write_text("#!/bin/sh\ntrue\n" if "/.bin/" in planted else "\n")
        (ws / planted).chmod(0o755)
    runner = _NODE if script.endswith(".js") else f"{_PY} -I"
    hook = f'{runner} "$CLAUDE_PROJECT_DIR"/.claude/hooks/{script}'
    before = hook_files(ws, [hook])
    (ws / planted).write_text(plant)
    done = subprocess.run(
        ["bash", "-c", hook],
        cwd=ws,
        env={
            "PATH": os.environ["PATH"],
            "CLAUDE_PROJECT_DIR": str(ws),
            "PYTHONSAFEPATH": "1",
            "HOME": str(tmp_path),
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert _MARK in done.stdout, (hook, done.stdout, done.stderr)  # the premise: the host runs it
    assert compare_hook_files(before, hook_files(ws, [hook])) is not None, f"{planted} unrecorded: {script}"


def test_a_script_chosen_at_run_time_records_the_tree(tmp_path: Path) -> None:
    """``subprocess.run(["python3", sys.argv[1]])``: no file to name; the tree is recorded."""
    ws = tmp_path / "ws"
    (ws / ".claude" / "hooks").mkdir(parents=True)
    (ws / ".claude" / "hooks" / "any.py").write_text(
        "import subprocess, sys\nsubprocess.run(['python3', sys.argv[1]])\n"
    )
    record = hook_files(ws, [f'{_PY} -I "$CLAUDE_PROJECT_DIR"/.claude/hooks/any.py x'])
    assert "." in record.files, record
