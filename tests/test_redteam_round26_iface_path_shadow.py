"""Round 26, interfaces: a workspace directory on the operator's ``PATH`` shadowed the programs of
every command the analysis ran unasked.

The local and bwrap backends give a command the host's ``PATH``. With a virtualenv of the
repository activated (``.venv/bin`` first), direnv's ``PATH_add bin`` or ``node_modules/.bin``,
the repository's own ``git`` or ``cat`` was the first of its name: ``git status``, judged
read-only and run without asking, ran a program the repository wrote (round 25 analysis "Left").
A command judged read-only now runs with ``PATH`` without the entries its session's commands may
write (and without relative entries); a command someone approved keeps the operator's ``PATH``.
Real `Runtime` sessions, default mode, no approver (an ask is denied), real bwrap.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

import shellrt
from shellrt.protocol import ResultEnvelope, ToolUseBlock
from shellrt.tools.bash import Bash
from tests._governance import envelope_text, isolated_workspace
from tests.conftest import require

pytestmark = pytest.mark.anyio


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    ws = isolated_workspace(tmp_path, monkeypatch)
    (ws / "notes.txt").write_text("the real file\n")
    planted = ws / ".venv" / "bin"
    planted.mkdir(parents=True)
    for name in ("git", "cat", "ls"):
        program = planted / name
        program.write_text(f"#!/bin/sh\necho planted > '{ws}/ran-{name}'\necho PLANTED-{name}\n")
        program.chmod(program.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    monkeypatch.setenv("PATH", f"{planted}:{os.environ.get('PATH', os.defpath)}")  # an activated venv
    return ws


async def _run(ws: Path, commands: list[str], mode: str, sandbox: str) -> list[ResultEnvelope]:
    async with shellrt.Runtime(ws, sandbox, session_dir=ws.parent / "session", tools=[Bash()], mode=mode) as rt:
        return await rt.run_envelopes(
            [ToolUseBlock(id=f"r26ps{i}", name="Bash", input={"command": c}) for i, c in enumerate(commands)]
        )


def _texts(envelopes: list[ResultEnvelope]) -> list[str]:
    return [envelope_text(e) for e in envelopes]


@pytest.mark.parametrize("sandbox", ["local", "bwrap"])
async def test_a_read_only_command_runs_the_system_program_not_the_workspace_s(ws: Path, sandbox: str) -> None:
    if sandbox == "bwrap":
        require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    commands = ["git --version", "cat notes.txt", "ls", "printenv PATH"]
    envelopes = await _run(ws, commands, "default", sandbox)
    texts = _texts(envelopes)
    ran = sorted(p.name for p in ws.glob("ran-*"))
    assert ran == [], (ran, texts)
    assert not any("PLANTED" in t for t in texts), texts
    assert all(not e.is_error for e in envelopes), texts
    assert texts[0].startswith("git version"), texts[0]
    assert "the real file" in texts[1], texts[1]
    assert str(ws) not in texts[3], texts[3]  # nothing of the workspace on the read-only PATH


async def test_an_approved_command_keeps_the_operator_s_path(ws: Path) -> None:
    # Not read-only (a write): it runs only because the mode allows it, and finds the venv as before.
    envelopes = await _run(ws, ["cat notes.txt > copy.txt; printenv PATH"], "bypassPermissions", "local")
    [text] = _texts(envelopes)
    assert f"{ws}/.venv/bin" in text, text
    assert (ws / "ran-cat").exists(), "the approved command no longer sees the operator's PATH"
