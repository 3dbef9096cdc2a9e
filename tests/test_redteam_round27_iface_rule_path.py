"""Round 27, interfaces: a command an allow rule let run found its program on the workspace's ``PATH``.

Round 26 gave commands judged read-only a ``PATH`` without the directories the session's commands
write; a command an allow rule let run kept the operator's ``PATH``, an activated ``.venv/bin``
first (round 26 iface "Left"). ``Bash(git:*)`` approves the program ``git``, not the project's
``.venv/bin/git``: such a command now runs with the read-only ``PATH`` too. A mode or a person's
answer keeps the operator's ``PATH`` (the premise test of round 26 still holds).
Real `Runtime` sessions, default mode, no approver (an ask is denied), real bwrap.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

import shellrt
from shellrt.protocol import ToolUseBlock
from shellrt.tools.bash import Bash
from tests._governance import envelope_text, isolated_workspace
from tests.conftest import require

pytestmark = pytest.mark.anyio


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    ws = isolated_workspace(tmp_path, monkeypatch)
    planted = ws / ".venv" / "bin"
    planted.mkdir(parents=True)
    for name in ("git", "printenv"):
        program = planted / name
        program.write_text(f"#!/bin/sh\necho planted > '{ws}/ran-{name}'\necho PLANTED-{name}\n")
        program.chmod(program.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    monkeypatch.setenv("PATH", f"{planted}:{os.environ.get('PATH', os.defpath)}")  # an activated venv
    return ws


@pytest.mark.parametrize("sandbox", ["local", "bwrap"])
async def test_a_rule_allowed_command_runs_the_system_program(ws: Path, sandbox: str) -> None:
    if sandbox == "bwrap":
        require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    allow = ["Bash(git:*)", "Bash(git status:*)", "Bash(printenv:*)"]
    commands = ["git init -q .", "git tag -h >/dev/null 2>&1; git status --short -uno; printenv PATH"]
    async with shellrt.Runtime(
        ws, sandbox, session_dir=ws.parent / "session", tools=[Bash()], mode="default", allow=allow
    ) as rt:
        envelopes = await rt.run_envelopes(
            [ToolUseBlock(id=f"r27rp{i}", name="Bash", input={"command": c}) for i, c in enumerate(commands)]
        )
    texts = [envelope_text(e) for e in envelopes]
    assert all(not e.is_error for e in envelopes), texts
    ran = sorted(p.name for p in ws.glob("ran-*"))
    assert ran == [], (ran, texts)
    assert not any("PLANTED" in t for t in texts), texts
    assert (ws / ".git").is_dir(), texts  # the system's git ran
    assert str(ws) not in texts[1], texts[1]  # nothing of the workspace on the rule-allowed PATH


async def test_a_person_approved_command_keeps_the_operator_s_path(ws: Path) -> None:
    from shellrt.permissions.interfaces import ApprovalRequest, ApprovalResponse

    async def yes(request: ApprovalRequest) -> ApprovalResponse:
        return ApprovalResponse(behavior="allow")

    async with shellrt.Runtime(
        ws, "local", session_dir=ws.parent / "session", tools=[Bash()], mode="default", approver=yes
    ) as rt:
        [envelope] = await rt.run_envelopes(
            [ToolUseBlock(id="r27rpa", name="Bash", input={"command": "git tag v1"})]
        )
    assert "PLANTED-git" in envelope_text(envelope), envelope_text(envelope)


async def test_a_rule_allowed_command_keeps_the_project_s_own_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the rule meant still runs: a tool only the project has (no other on the system's
    ``PATH``) and a virtualenv's ``python3`` (a link to the system's) keep the operator's ``PATH``;
    a ``git`` linked to an interpreter (``git status`` would run ``./status``) does not."""
    ws = isolated_workspace(tmp_path, monkeypatch)
    venv = ws / ".venv" / "bin"
    venv.mkdir(parents=True)
    tool = venv / "r27-only-here"
    tool.write_text('#!/bin/sh\necho "ONLY-HERE $PATH"\n')
    tool.chmod(0o755)
    python = shutil.which("python3")  # the operator's own (a venv is made from it)
    assert python is not None
    (venv / "python3").symlink_to(os.path.realpath(python))
    (venv / "git").symlink_to(os.path.realpath(python))
    (ws / "status").write_text(f"open({str(ws / 'ran-status')!r}, 'w').write('x')\n")
    monkeypatch.setenv("PATH", f"{venv}:{os.environ.get('PATH', os.defpath)}")
    allow = ["Bash(r27-only-here:*)", "Bash(python3:*)", "Bash(git:*)"]
    commands = ["r27-only-here", "python3 -c 'import os; print(\"PY\", os.environ[\"PATH\"])'", "git status"]
    async with shellrt.Runtime(
        ws, "local", session_dir=ws.parent / "session", tools=[Bash()], mode="default", allow=allow
    ) as rt:
        envelopes = await rt.run_envelopes(
            [ToolUseBlock(id=f"r27own{i}", name="Bash", input={"command": c}) for i, c in enumerate(commands)]
        )
    texts = [envelope_text(e) for e in envelopes]
    assert f"ONLY-HERE {venv}:" in texts[0], texts
    assert f"PY {venv}:" in texts[1], texts
    assert not (ws / "ran-status").exists(), texts
