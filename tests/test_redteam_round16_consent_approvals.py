"""Red team round 16 (consent): what a person approves is what runs, then and later.

The attacker is the model (it picks every input, and may ``cd`` unasked: ``cd`` is read-only)
and the repository (it holds a benign ``run.sh`` at its top and another in ``tools/``).

- An approver that edits the input and answers "allow always" had the rules of the input it
  replaced remembered: the model's ``touch pwned``, which the person rewrote, then ran unasked.
- "Allow always" for ``./run.sh`` (or ``python3 t.py``) remembered a rule that, after an unasked
  ``cd tools``, ran ``tools/run.sh``: another file than the one approved.
- The prompt did not say where the call runs, so after that ``cd`` the person was asked about
  ``./run.sh`` with nothing telling them it was ``tools/run.sh``; nor did the transcript.

Real `Runtime` sessions on the local backend (the rules, not the sandbox, are under test here).
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.permissions.approvers import TerminalApprover
from shellrt.permissions.interfaces import ApprovalRequest, ApprovalResponse
from shellrt.runtime import Runtime
from shellrt.server.mcp_approval import approval_text


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A workspace with a benign script at its top and a hostile one of the same name below."""
    root = tmp_path / "ws"
    (root / "tools").mkdir(parents=True)
    (tmp_path / "home").mkdir()
    for where, text in ((root, "echo benign"), (root / "tools", "echo EVIL; touch ../pwned")):
        script = where / "run.sh"
        script.write_text(f"#!/bin/sh\n{text}\n")
        script.chmod(0o755)
        (where / "t.py").write_text(
            "print('benign')\n" if where == root else "open('../pwned', 'w'); print('EVIL')\n"
        )
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("SHELLRT_TRUST_STORE", str(tmp_path / "trusted.json"))
    yield root


def _use(index: int, command: str) -> dict[str, Any]:
    block = {"type": "tool_use", "id": f"t{index}", "name": "Bash", "input": {"command": command}}
    return {"role": "assistant", "content": [block]}


async def _session(
    ws: Path, commands: list[str], answers: list[ApprovalResponse]
) -> tuple[list[str], list[ApprovalRequest]]:
    """Run each command as its own message; the approver gives ``answers`` in turn, then denies."""
    asked: list[ApprovalRequest] = []

    async def approver(request: ApprovalRequest) -> ApprovalResponse:
        asked.append(request)
        return answers[len(asked) - 1] if len(asked) <= len(answers) else ApprovalResponse(behavior="deny")

    texts: list[str] = []
    async with Runtime(ws, "local", approver=approver) as rt:
        for index, command in enumerate(commands):
            out = await rt.run(_use(index, command))
            texts.append(json.dumps(out["content"][0]))
    return texts, asked


def test_an_edited_answer_remembers_nothing_for_the_input_it_replaced(ws: Path) -> None:
    edited = ApprovalResponse(behavior="allow", remember="session", updated_input={"command": "echo edited"})
    texts, asked = anyio.run(_session, ws, ["touch pwned", "touch pwned"], [edited])
    assert "edited" in texts[0], texts[0]  # the person's input ran in place of the model's
    assert len(asked) == 2, [a.tool_input for a in asked]  # the model's own input asks again
    assert not (ws / "pwned").exists(), texts


@pytest.mark.parametrize("command", ["./run.sh", "python3 t.py"])
def test_a_remembered_rule_does_not_follow_the_session_into_another_directory(ws: Path, command: str) -> None:
    always = ApprovalResponse(behavior="allow", remember="session")
    texts, asked = anyio.run(_session, ws, [command, "cd tools", command, f"cd {ws}", command], [always])
    assert "benign" in texts[0], texts[0]
    assert "Working directory is now" in texts[1], texts[1]  # cd ran unasked (read-only)
    assert not (ws / "pwned").exists(), texts  # tools/run.sh was never approved
    assert "EVIL" not in texts[2] and json.loads(texts[2])["is_error"], texts[2]
    assert [a.tool_input["command"] for a in asked] == [command, command], [a.tool_input for a in asked]
    assert asked[1].cwd == str(ws / "tools"), asked[1].cwd
    assert "benign" in texts[4], texts[4]  # back where it was approved, the answer still holds


def test_the_prompt_and_the_transcript_say_where_the_call_runs(ws: Path) -> None:
    texts, asked = anyio.run(_session, ws, ["cd tools", "./run.sh"], [ApprovalResponse(behavior="allow")])
    assert "EVIL" in texts[1], texts  # the person allowed it, knowing where (below)
    request = asked[0]
    assert request.cwd == str(ws / "tools"), request
    shown = io.StringIO()
    answer = TerminalApprover(stdin=io.StringIO("n\n\n"), stdout=shown)._ask(request)
    assert answer.behavior == "deny"
    assert f"in directory: {ws / 'tools'}" in shown.getvalue(), shown.getvalue()
    assert str(ws / "tools") in approval_text(request), approval_text(request)
    transcripts = list((ws.parent / "state").rglob("transcript.jsonl"))
    assert len(transcripts) == 1, transcripts
    lines = [json.loads(line) for line in transcripts[0].read_text().splitlines()]
    ran = [x for x in lines if x.get("type") == "call" and x["input"] == {"command": "./run.sh"}]
    assert len(ran) == 1 and ran[0]["cwd"] == str(ws / "tools"), ran


@pytest.mark.parametrize("calls", [1, 2])
def test_a_call_the_caller_cancelled_says_so_in_the_transcript(ws: Path, calls: int) -> None:
    """The transcript held a start line only for a call cut short (as after a crash): a resend
    that ran it again looked like its first run. Both paths: one call, and a message of several."""
    blocks = [
        {"type": "tool_use", "id": f"c{i}", "name": "Bash", "input": {"command": f"sleep 5; touch done{i}"}}
        for i in range(calls)
    ]

    async def main() -> None:
        async with Runtime(ws, "local", mode="bypassPermissions") as rt:
            with anyio.move_on_after(0.5):
                await rt.run({"role": "assistant", "content": blocks})
                raise AssertionError("the call was not cancelled")

    anyio.run(main)
    (transcript,) = (ws.parent / "state").rglob("transcript.jsonl")
    lines = [json.loads(line) for line in transcript.read_text().splitlines()]
    cut = {x["tool_use_id"] for x in lines if x.get("type") == "cut_short"}
    assert cut == {b["id"] for b in blocks}, lines
    assert not [x for x in lines if x.get("type") == "call"], lines
    assert not list(ws.glob("done*"))
