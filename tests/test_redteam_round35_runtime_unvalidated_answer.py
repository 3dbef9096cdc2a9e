"""Red team round 35 (runtime): an approver's answer that is not a valid one is a denial.

The gate asks the approver (a CLI prompt, an MCP elicitation, an API caller's callback) and treated
every answer whose ``behavior`` was not ``"deny"`` as an allow. ``ApprovalResponse`` validation
allows only ``"allow"`` and ``"deny"``, but ``ApprovalResponse.model_construct(behavior=...)`` skips
it: a callback that put the person's own word there ("no", "Deny", False) ran the call. The Runtime
now validates each answer afresh; one that fails is the approval failing, which denies.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

import shellrt
from shellrt.permissions import ApprovalRequest, ApprovalResponse
from tests._bwrap_session import require_bwrap
from tests.test_server_jsonl import bash, text_of


def test_an_invalid_answer_denies(tmp_path: Path) -> None:
    """Failed before: 3 of 3 invalid answers ran the command (its file was made)."""
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    answers: list[Any] = [
        ApprovalResponse.model_construct(behavior="no"),
        ApprovalResponse.model_construct(behavior=False),
        ApprovalResponse(behavior="allow").model_copy(update={"behavior": "Deny"}),
    ]
    asked: list[str] = []

    async def approver(request: ApprovalRequest) -> ApprovalResponse:
        asked.append(request.tool_name)
        answer: ApprovalResponse = answers[len(asked) - 1]
        return answer

    async def scenario() -> list[tuple[bool, str]]:
        async with shellrt.Runtime(ws, "bwrap", session_dir=tmp_path / "s", approver=approver) as rt:
            outs = []
            for i in range(len(answers)):
                block = (await rt.run([bash(f"c{i}", f"touch made{i}")]))["content"][0]
                outs.append((bool(block["is_error"]), text_of(block)))
            return outs

    outs = anyio.run(scenario)
    assert len(asked) == len(answers), asked  # each call was asked about
    made = sorted(p.name for p in ws.iterdir() if p.name.startswith("made"))
    assert made == [], f"an invalid answer ran the call: {made} {outs}"
    for is_error, text in outs:
        assert is_error and "not run" in text and "model_validate" in text, text
