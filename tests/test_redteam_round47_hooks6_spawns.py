"""Red team round 47 (hooks6): a Python or node hook script that starts a tool
(``subprocess.run(["npx", "prettier", "--write", path])``, ``os.system("pytest -q")``,
``execFileSync('npx', ['prettier', ...])``, ``execSync('make lint')``).

The script was recorded with its directory; what the tool it starts loads was not (the resolution
of a command line -- ``npx``'s local binary and ``node_modules``, project runners, searching
tools -- applied to the hook's own line and, since this round, its shell scripts' commands): a
sandboxed command's rewrite of ``node_modules/prettier/index.js`` ran on the host.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.permissions.hook_files import compare_hook_files, hook_files

_PY = [
    'import subprocess, sys\nsubprocess.run(["npx", "prettier", "--write", sys.argv[1]])\n',
    'import subprocess\nsubprocess.check_call(("npx", "--no-install", "prettier", "-w", "."))\n',
    "import os\nos.system('pytest -q')\n",
    "from subprocess import run\nrun('make lint', shell=True)\n",
]
_JS = [
    "const cp = require('child_process');\ncp.execFileSync('npx', ['prettier', '--write', f]);\n",
    "const { execSync } = require('child_process');\nexecSync('npx prettier --write ' + f);\n",
    "require('child_process').spawnSync(\"pytest\", [\"-q\"]);\n",
]


def _project(ws: Path) -> None:
    (ws / "node_modules" / "prettier").mkdir(parents=True)
    (ws / "node_modules" / ".bin").mkdir()
    (ws / "node_modules" / "prettier" / "index.js").write_text("module.exports = 1;\n")
    (ws / "node_modules" / ".bin" / "prettier").symlink_to("../prettier/index.js")
    (ws / "tests").mkdir()
    (ws / "Makefile").write_text("lint:\n\tsh scripts/lint.sh\n")
    (ws / ".claude" / "hooks").mkdir(parents=True)


@pytest.mark.parametrize("source", _PY + _JS)
def test_a_tool_a_hook_script_starts_is_resolved(tmp_path: Path, source: str) -> None:
    """Failed 5 of 7 before: the plant kept the hook's record (held: the two node scripts starting
    ``npx prettier``, whose ``node_modules`` round 45 records for any node script)."""
    ws = tmp_path / "ws"
    _project(ws)
    name = "fmt.js" if "require(" in source else "fmt.py"
    (ws / ".claude" / "hooks" / name).write_text(source)
    hook = f'{"node" if name.endswith(".js") else "python3"} "$CLAUDE_PROJECT_DIR"/.claude/hooks/{name}'
    before = hook_files(ws, [hook])
    assert not before.problems(), before.problems()
    planted = ws / ("node_modules/prettier/index.js" if "prettier" in source else "tests/conftest.py")
    if "make" in source:
        (ws / "scripts").mkdir()
        planted = ws / "scripts" / "lint.sh"
    planted.write_text("require('child_process').execSync('id')\n")
    assert compare_hook_files(before, hook_files(ws, [hook])) is not None, f"{planted} not recorded"


def test_a_script_starting_a_plain_tool_stays_narrow(tmp_path: Path) -> None:
    """Control: ``subprocess.run(["git", "diff"])`` and ``execSync('jq .')`` record no tree."""
    ws = tmp_path / "ws"
    _project(ws)
    (ws / ".claude" / "hooks" / "g.py").write_text('import subprocess\nsubprocess.run(["git", "diff"])\n')
    (ws / ".claude" / "hooks" / "g.js").write_text("require('child_process').execSync('jq .');\n")
    for hook in ('python3 "$CLAUDE_PROJECT_DIR"/.claude/hooks/g.py', 'node "$CLAUDE_PROJECT_DIR"/.claude/hooks/g.js'):
        record = hook_files(ws, [hook])
        (ws / "tests" / "conftest.py").write_text("x = 1\n")
        assert compare_hook_files(record, hook_files(ws, [hook])) is None, hook
        (ws / "tests" / "conftest.py").unlink()
