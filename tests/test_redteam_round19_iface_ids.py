"""Round 19, interfaces: one tool_use id named two calls of one session.

Round 18 left it open: a tool_use id reused in a later message with another input ran again
under the same id. The result, the transcript and a hook's ``tool_use_id`` then named two calls
(an approval service that keys answers by id applies the first call's answer to the second), and
a resend of the first call was no longer answered from the record but ran again. The same id
sent twice at once (a client's retry while the call still runs) ran twice. An id now names one
call for the session: a resend of the same call is answered from its record (or, while it runs,
refused); another call under a used id is refused, with an error that says to use a new id.
Real `Runtime` sessions on the local backend (the bookkeeping is under test, not the sandbox).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.permissions.interfaces import ApprovalRequest, ApprovalResponse
from shellrt.runtime import Runtime
from tests._governance import isolated_workspace


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolated_workspace(tmp_path, monkeypatch)


def _use(tool_use_id: str, command: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [
        {"type": "tool_use", "id": tool_use_id, "name": "Bash", "input": {"command": command}}
    ]}


def _calls(session_dir: Path, tool_use_id: str) -> list[dict[str, Any]]:
    lines = (session_dir / "transcript.jsonl").read_text().splitlines()
    entries = [json.loads(line) for line in lines if line.strip()]
    return [e for e in entries if e.get("type") == "call" and e.get("tool_use_id") == tool_use_id]


def test_a_used_id_with_another_input_is_refused_and_the_first_call_still_replays(ws: Path) -> None:
    session_dir = ws.parent / "s"

    async def main() -> list[dict[str, Any]]:
        out = []
        async with Runtime(ws, "local", mode="acceptEdits", session_dir=session_dir) as rt:
            out.append((await rt.run(_use("x1", "echo first")))["content"][0])
            out.append((await rt.run(_use("x1", "echo second > made")))["content"][0])
            out.append((await rt.run(_use("x1", "echo first")))["content"][0])
        return out

    first, reused, resent = anyio.run(main)
    assert first["content"] == "first" and not first["is_error"], first
    assert not (ws / "made").exists(), "a second call ran under a used tool_use id"
    assert reused["is_error"] and "x1" in reused["content"] and "new id" in reused["content"], reused
    assert resent == first  # answered from the record, not run again
    assert [c["ran"] for c in _calls(session_dir, "x1")] == [True, False, False]


def test_the_id_of_a_denied_call_cannot_carry_another_call(ws: Path) -> None:
    asked: list[ApprovalRequest] = []

    async def approver(request: ApprovalRequest) -> ApprovalResponse:
        asked.append(request)
        return ApprovalResponse(behavior="deny" if len(asked) == 1 else "allow")

    async def main() -> list[dict[str, Any]]:
        async with Runtime(ws, "local", approver=approver, session_dir=ws.parent / "s") as rt:
            denied = (await rt.run(_use("y1", "touch denied")))["content"][0]
            other = (await rt.run(_use("y1", "touch other")))["content"][0]
        return [denied, other]

    denied, other = anyio.run(main)
    assert denied["is_error"] and other["is_error"], (denied, other)
    assert len(asked) == 1, [a.description for a in asked]  # the second never reached a prompt (or a hook)
    assert not (ws / "other").exists() and not (ws / "denied").exists()


def test_one_call_sent_twice_at_once_runs_once(ws: Path) -> None:
    command = "echo run >> runs.log; sleep 1"

    async def main() -> list[dict[str, Any]]:
        results: list[dict[str, Any]] = []
        async with Runtime(ws, "local", mode="acceptEdits", session_dir=ws.parent / "s") as rt:

            async def send() -> None:
                results.append((await rt.run(_use("z1", command)))["content"][0])

            async with anyio.create_task_group() as tg:
                tg.start_soon(send)
                await anyio.sleep(0.3)
                tg.start_soon(send)
        return results

    results = anyio.run(main)
    assert (ws / "runs.log").read_text() == "run\n", "the same call ran twice at once"
    assert sorted(r["is_error"] for r in results) == [False, True], results


def test_a_batch_task_with_one_id_twice_is_refused_before_it_runs() -> None:
    from pydantic import ValidationError

    from shellrt.batch.tasks import Task

    use = {"type": "tool_use", "id": "t1", "name": "Bash"}
    commands = [{**use, "input": {"command": "ls"}}, {**use, "input": {"command": "pwd"}}]
    with pytest.raises(ValidationError, match="used twice in this task"):
        Task.model_validate({"id": "task", "commands": commands})
