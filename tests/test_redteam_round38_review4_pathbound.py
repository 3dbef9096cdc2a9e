"""Red team round 38 (review4): the operator's PATH as a command can bend the guard's reading of it.

The workspace's ``.venv/bin`` is first on the operator's PATH (an activated virtualenv: round 38
trust's own example). The guard keeps a file there only when no other PATH directory holds its name
(a new entry point); one named ``git`` shadows the host's git in the operator's next shell. Its map of
PATH names stopped at 65,536 names, counting the workspace directory's own first: a command that made
that many files there left ``/usr/bin`` unread (the test lowers the bound: the same reading, fewer files), and its ``git`` was "a new name" -- kept, and the file
tools did not ask. And a relative PATH entry (``.``, or an empty one: ``PATH=:/usr/bin``, a stray
colon) was skipped, though it names the directory the operator's next shell runs in: a ``git`` made
in any directory of the workspace is run by the operator's next ``git`` there.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.runtime import Runtime
from shellrt.supervisor import _operator_places, _protect_home
from shellrt.supervisor.protect import protected_reason
from tests.conftest import require


def _run(ws: Path, session: Path, command: str, backend: str = "local") -> list[dict[str, Any]]:
    if backend == "bwrap":
        require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")

    async def main() -> list[dict[str, Any]]:
        async with Runtime(ws, backend, mode="bypassPermissions", session_dir=session) as rt:
            block = {"type": "tool_use", "id": "c0", "name": "Bash", "input": {"command": command}}
            return list((await rt.run({"role": "assistant", "content": [block]}))["content"])

    return anyio.run(main)


def _isolate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    tmp_path.chmod(0o755)
    ws = tmp_path / "ws"
    ws.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("SHELLRT_TRUST_STORE", raising=False)
    return ws


def test_a_flooded_path_directory_still_guards_a_shadowing_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = _isolate(tmp_path, monkeypatch)
    venv_bin = ws / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    monkeypatch.setenv("PATH", f"{venv_bin}:{os.environ['PATH']}")
    # The activated venv (round 39 trust2: any other PATH directory is guarded whole, flood or not).
    monkeypatch.setenv("VIRTUAL_ENV", str(ws / ".venv"))
    # The bound lowered from 65,536 to 4,096 names (and the flood with it): the same reading runs
    # out the same way, at a sixteenth of the files (70,000 files cost this test 84 s in CI127).
    monkeypatch.setattr(_operator_places, "_PROGRAM_NAMES", 4_096)
    monkeypatch.setattr(_protect_home, "_PROGRAMS_CACHE", [])
    command = (
        "python3 -c \"import os\nfor i in range(4500): open('.venv/bin/e%05d' % i, 'w').close()\n"
        "open('.venv/bin/g' + 'it', 'w').write('#!/bin/sh')\" && echo planted"
    )
    results = _run(ws, tmp_path / "s", command)
    shown = json.dumps(results)[:2000]
    assert not results[0]["is_error"] and "planted" in results[0]["content"], shown
    assert not os.path.lexists(venv_bin / "git"), f"kept: .venv/bin/git ({shown})"
    (venv_bin / "git").write_text("#!/bin/sh\n")  # the file tools' judgement of the same flooded place
    assert protected_reason(venv_bin / "git"), "the file tools must ask too"


@pytest.mark.parametrize(("entry", "backend"), [("", "local"), (".", "local"), ("./", "local"), ("", "bwrap")])
def test_a_relative_path_entry_guards_shadowing_names_in_every_directory(
    entry: str, backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = _isolate(tmp_path, monkeypatch)
    monkeypatch.setenv("PATH", f"{entry}:{os.environ['PATH']}")
    plants = ["git", "src/ls"]
    kept = ["src/main.py", "r38-review4-new-name"]
    # Absolute programs: shellrt itself refuses a command whose programs PATH's relative entry may find.
    command = (
        "/usr/bin/python3 -c \"import os\nos.makedirs('src', exist_ok=True)\n"
        "for f in ['gi_t', 'src/l_s', 'src/main.py', 'r38-review4-new-name']:\n"
        "    open(f.replace('_', ''), 'w').write('#!/bin/sh')\" && echo planted"
    )
    results = _run(ws, tmp_path / "s", command, backend)
    shown = json.dumps(results)[:2000]
    assert not results[0]["is_error"] and "planted" in results[0]["content"], shown
    left = [rel for rel in plants if os.path.lexists(ws / rel)]
    assert not left, f"kept: {left} ({shown})"
    assert all((ws / rel).exists() for rel in kept), shown
    for rel in plants:
        (ws / rel).write_text("#!/bin/sh\n")
    missed = [rel for rel in plants if not protected_reason(ws / rel)]
    assert not missed, f"the file tools must ask too: {missed}"
    assert not any(protected_reason(ws / rel) for rel in kept)
