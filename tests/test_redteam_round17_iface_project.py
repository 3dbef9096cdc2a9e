"""Round 17, interfaces: "allow always in this project" was not anchored once saved (left open in
round 16).

The session's copy of a remembered rule covers a call only in the directories it was approved
in (round 16), but the saved copy in ``.shellrt/settings.local.json`` is read by the next session
like an operator's rule, good in every directory: the person allows ``./run.sh`` (the benign one
at the top) "always in this project", and in a later session the model's unasked ``cd tools``
then ``./run.sh`` runs ``tools/run.sh``, which the person never saw. Rule files have no syntax for
a directory, so an answer whose command names a file by a relative path (``./run.sh``,
``python3 t.py``) is now remembered for the session only, and the prompt's chain and the
session's diagnostics say why. Real `Runtime` sessions on the local backend.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.permissions.interfaces import ApprovalRequest, ApprovalResponse
from shellrt.runtime import Runtime


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "ws"
    (root / "tools").mkdir(parents=True)
    (tmp_path / "home").mkdir()
    for where, text in ((root, "echo benign"), (root / "tools", "echo EVIL; touch ../pwned")):
        (where / "run.sh").write_text(f"#!/bin/sh\n{text}\n")
        (where / "run.sh").chmod(0o755)
        (where / "t.py").write_text("print('benign')\n" if where == root else "open('../pwned', 'w')\n")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("SHELLRT_TRUST_STORE", str(tmp_path / "trusted.json"))
    yield root


def _use(index: int, command: str) -> dict[str, Any]:
    block = {"type": "tool_use", "id": f"t{index}", "name": "Bash", "input": {"command": command}}
    return {"role": "assistant", "content": [block]}


async def _session(ws: Path, commands: list[str], answer: ApprovalResponse) -> tuple[list[str], list[ApprovalRequest], list[str]]:
    asked: list[ApprovalRequest] = []

    async def approver(request: ApprovalRequest) -> ApprovalResponse:
        asked.append(request)
        return answer if len(asked) == 1 else ApprovalResponse(behavior="deny")

    texts: list[str] = []
    async with Runtime(ws, "local", approver=approver, trust_workspace=True) as rt:
        for index, command in enumerate(commands):
            out = await rt.run(_use(index, command))
            texts.append(json.dumps(out["content"][0]))
        diagnostics = list(rt.diagnostics) + list(getattr(rt.gate, "diagnostics", []))
    return texts, asked, diagnostics


@pytest.mark.parametrize("command", ["./run.sh", "python3 t.py"])
def test_a_project_answer_for_a_relative_file_does_not_hold_in_another_directory(ws: Path, command: str) -> None:
    project = ApprovalResponse(behavior="allow", remember="project")
    texts, _asked, diagnostics = anyio.run(_session, ws, [command, command], project)
    assert "benign" in texts[0], texts
    assert not (ws / "pwned").exists()
    # A later session: the model moves unasked, then runs the same words.
    later, asked, _ = anyio.run(_session, ws, ["cd tools", command], ApprovalResponse(behavior="deny"))
    assert not (ws / "pwned").exists(), later  # tools/ ran, unasked
    assert any(command in a.description for a in asked), later
    assert any("session only" in d for d in diagnostics), diagnostics


def test_a_project_answer_without_relative_files_is_still_saved(ws: Path) -> None:
    project = ApprovalResponse(behavior="allow", remember="project")
    anyio.run(_session, ws, ["touch made"], project)
    saved = json.loads((ws / ".shellrt" / "settings.local.json").read_text())
    assert "Bash(touch made)" in saved["permissions"]["allow"], saved
