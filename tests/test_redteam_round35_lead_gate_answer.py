"""Round 35 (lead; runtime's Left): the rules gate allowed on any approver answer but "deny".

The Runtime now validates an approver's answer again (round 35 runtime), but `RulesGate` -- the
gate a caller builds around the rules engine without a Runtime -- still ran a call on any answer
whose ``behavior`` was not exactly ``"deny"``: ``ApprovalResponse.model_construct(behavior="no")``
(or ``False``, ``"Deny"``) allowed it, and a ``remember`` outside its three values was taken as
a scope to save rules in (3 of 3 allowed before). The gate validates the answer it acts on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sandbox.base import SandboxBackend
from sandbox.local import LocalBackend
from sandbox.policy import SandboxPolicy
from shellrt.permissions import ApprovalRequest, ApprovalResponse, PermissionEngine, PermissionGate, RuleSet
from shellrt.permissions.gate import RulesGate
from shellrt.protocol import ToolContext
from shellrt.tools.bash import Bash

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    "answer",
    [
        ApprovalResponse.model_construct(behavior="no"),  # type: ignore[arg-type]
        ApprovalResponse.model_construct(behavior=False),  # type: ignore[arg-type]
        ApprovalResponse(behavior="allow").model_copy(update={"behavior": "Deny"}),
        ApprovalResponse(behavior="allow").model_copy(update={"remember": "forever"}),
    ],
    ids=["no", "false", "Deny", "remember-forever"],
)
async def test_an_invalid_answer_denies_at_the_gate(tmp_path: Path, answer: Any) -> None:
    async def approver(request: ApprovalRequest) -> ApprovalResponse:
        given: ApprovalResponse = answer
        return given

    gate = RulesGate(PermissionEngine(RuleSet([]), workspace=tmp_path), approver=approver)
    backend = LocalBackend(policy=SandboxPolicy(workspace=tmp_path))
    ctx = ToolContext(
        session_id="s",
        session_dir=tmp_path,
        workspace=tmp_path,
        cwd=str(tmp_path),
        services={PermissionGate: gate, SandboxBackend: backend},
    )
    tool = Bash()
    decision = await gate.authorize(tool, tool.parse_input({"command": f"touch {tmp_path}/made"}), ctx)
    assert decision.behavior == "deny", decision
    assert "not run" in decision.reason, decision.reason
