"""Red team, round 50 (analysis10): env's NAME=VALUE words as env reads them, in a hook's command.

Round 46 read ``env NODE_PATH=lib node x.js`` in a hook by a regex over each word's source text
(``NAME=`` unquoted), beside the planner, which gave the wrapped ``node`` command no assignment at
all. A spelling env reads as the same assignment and the regex did not: ``env 'NODE_PATH=lib'``,
``env "NODE_PATH"=lib``, ``env N\\ODE_PATH=lib``, ``env -S'NODE_PATH=lib' node …``: ``lib`` was not
recorded, and a sandboxed command's change to ``lib/plug.js`` (which ``require('plug')`` loads) ran in
the next hook on the host unasked (5 of 6 before). The planner now reads env's words once
(`programs/env_args.read_env`) and gives the wrapped command its assignments.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from shellrt.permissions.hook_files import compare_hook_files, hook_files

HOOKS = [
    "env 'NODE_PATH=lib' node scripts/guard.js", 'env "NODE_PATH"=lib node scripts/guard.js',
    "env N\\ODE_PATH=lib node scripts/guard.js", "env -S'NODE_PATH=lib' node scripts/guard.js",
    "env 'NODE_OPTIONS=--require=./lib/plug.js' node scripts/guard.js",
    "env - 'NODE_PATH=lib' node scripts/guard.js",
]  # fmt: skip


def _workspace(root: Path) -> Path:
    ws = root / "ws"
    (ws / "scripts").mkdir(parents=True)
    (ws / "lib").mkdir()
    (ws / "lib" / "plug.js").write_text("module.exports = 1;\n")
    (ws / "scripts" / "guard.js").write_text("require('plug');\n")
    return ws


def test_each_spelling_loads_the_plugin_under_the_real_env(tmp_path: Path) -> None:
    """Each hook does load ``lib/plug.js`` (real env and node here): the change must be seen."""
    node = shutil.which("node")
    if node is None:
        return  # what node loads is then not shown; the record test below still runs
    ws = _workspace(tmp_path)
    (ws / "lib" / "plug.js").write_text("console.log('plugin ran');\n")
    script = "".join(f"{h.replace('node ', node + ' ', 1)} || echo failed\n" for h in HOOKS)
    ran = subprocess.run(["bash", "-c", script], cwd=ws, capture_output=True, text=True, timeout=60)
    assert ran.stdout.count("plugin ran") == len(HOOKS), (ran.stdout, ran.stderr)


def test_the_plugin_a_wrapped_assignment_names_is_recorded(tmp_path: Path) -> None:
    missed = []
    for index, hook in enumerate(HOOKS):
        ws = _workspace(tmp_path / str(index))
        before = hook_files(ws, [hook])
        (ws / "lib" / "plug.js").write_text("require('child_process').execSync('id')\n")
        if before.problems() or compare_hook_files(before, hook_files(ws, [hook])) is None:
            missed.append(hook)
    assert missed == []
