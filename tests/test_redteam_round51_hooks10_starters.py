"""Red team round 51 (hooks10): children a Python hook script starts by spellings round 50 did not read.

Round 50 read a Python hook script's children through ``subprocess``' and ``os``' calls by their
exact dotted names, and only when the program was a literal. ``import subprocess as sp;
sp.run([...])``, ``from subprocess import run as go``, ``asyncio.create_subprocess_exec``,
``pty.spawn`` and ``subprocess.run([tool, ...])`` with ``tool`` built at run time each ran a
command's ``tools/w.sh`` on the host, unrecorded (5 of 5 failed before). Now calls are read
through the script's import aliases, and a call that starts a child the reader cannot read
records the tree (`hook_loads_python._starts_a_child`).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from shellrt.permissions.hook_files import compare_hook_files, hook_files
from tests._hook_on_host import run_hook_on_host

_MARK = "R51-HOOKS10-STARTERS"
_PY = shutil.which("python3.11") or shutil.which("python3") or ""

_SCRIPTS = {
    "alias": 'import subprocess as sp\nsp.run(["bash", "tools/w.sh"])\n',
    "from_as": 'from subprocess import run as go\ngo(["bash", "tools/w.sh"])\n',
    "asyncio": (
        "import asyncio\n"
        "async def main():\n"
        '    p = await asyncio.create_subprocess_exec("bash", "tools/w.sh")\n'
        "    await p.wait()\n"
        "asyncio.run(main())\n"
    ),
    "pty": 'import pty\npty.spawn(["bash", "tools/w.sh"])\n',
    "computed": 'import subprocess\ntool = "ba" + "sh"\nsubprocess.run([tool, "tools/w.sh"])\n',
}


@pytest.mark.parametrize("name", sorted(_SCRIPTS))
def test_a_child_started_by_another_spelling_is_read(tmp_path: Path, name: str) -> None:
    ws = tmp_path / "ws"
    (ws / ".claude" / "hooks").mkdir(parents=True)
    (ws / "tools").mkdir()
    (ws / "tools" / "w.sh").write_text("true\n")
    (ws / ".claude" / "hooks" / f"{name}.py").write_text(_SCRIPTS[name])
    hook = f'{_PY} -I "$CLAUDE_PROJECT_DIR"/.claude/hooks/{name}.py'
    before = hook_files(ws, [hook])
    (ws / "tools" / "w.sh").write_text(f"echo {_MARK}\n")
    run_hook_on_host(ws, hook, _MARK, name)
    assert compare_hook_files(before, hook_files(ws, [hook])) is not None, f"tools/w.sh unrecorded: {name}"
