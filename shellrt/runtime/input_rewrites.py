"""An input rewritten while asking (``updatedInput``) is judged again, like the model's own.

Why: a PermissionRequest hook or the approver may answer an ask with another input.
Run as given, that input would skip the schema, the tool's validation, the command
analysis and every deny rule. So each new input is parsed, validated and decided
again; an ask on it goes to the hooks and the approver again (the answer given was
for the old input), except when the approver itself wrote it. An input rewritten
`MAX_REWRITES` times in a row is refused: a hook that always rewrites never settles.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from shellrt.permissions import PermissionDecision, PermissionGate
from shellrt.protocol import Tool, ToolContext

__all__ = ["MAX_REWRITES", "Prepare", "Settled", "authorize_rewrites"]

#: Rewrites in a row a call may go through before it is refused.
MAX_REWRITES = 3

#: Parses, validates and backfills a raw input: (input, backfilled copy) or the error message.
Prepare = Callable[[Any], Awaitable[tuple[BaseModel, BaseModel] | str]]


@dataclass(frozen=True)
class Settled:
    """The final decision and the input it was made on (the one to run when allowed)."""

    decision: PermissionDecision
    tool_input: BaseModel
    backfilled: BaseModel
    #: Who rewrote the input on the way, in order ("hook", "approver").
    rewritten_by: tuple[str, ...] = ()


async def authorize_rewrites(
    gate: PermissionGate,
    tool: Tool[Any, Any],
    tool_input: BaseModel,
    backfilled: BaseModel,
    ctx: ToolContext,
    *,
    hook_decision: PermissionDecision | None,
    prepare: Prepare,
) -> Settled:
    """Ask ``gate`` about the call, then about every input an answer rewrote it to.

    The returned decision never carries ``updated_input``: its input is ``tool_input``.
    A rewrite that is invalid, or one too many, becomes a deny that says why.
    """
    decision = await gate.authorize(tool, backfilled, ctx, hook_decision=hook_decision)
    if decision.updated_input is None:
        return Settled(decision, tool_input, backfilled)  # the usual case: nothing was rewritten
    chain = list(decision.chain)
    by: list[str] = []
    while decision.behavior == "allow" and decision.updated_input is not None:
        who = _rewriter(decision)
        prepared = await prepare(decision.updated_input)
        if isinstance(prepared, str):
            reason = (
                f"{_WHO[who]} answered with an input that is not valid, so the call was not run: {prepared}"
            )
            return Settled(
                _refusal(reason, chain, f"{who} rewrote the input: invalid"), tool_input, backfilled
            )
        new_input, new_backfilled = prepared
        given = new_input.model_dump(mode="json")
        if given in (tool_input.model_dump(mode="json"), backfilled.model_dump(mode="json")):
            break  # the answer repeated the input it allowed (as written or as it was shown): no rewrite
        by.append(who)
        chain.append(f"input rewritten by the {who}: {new_backfilled.model_dump(mode='json')}")
        if len(by) > MAX_REWRITES:
            reason = (
                f"The {tool.name} input was rewritten {len(by)} times in a row while asking for permission "
                f"(last by {_WHO[who].lower()}); each new input was judged again and rewritten again, so the "
                "call was not run. A PermissionRequest hook should allow the input it rewrote to as it is."
            )
            return Settled(_refusal(reason, chain, "too many rewrites -> deny"), tool_input, backfilled)
        tool_input, backfilled = new_input, new_backfilled
        approved = backfilled.model_dump(mode="json") if who == "approver" else None
        # A PreToolUse verdict was about the old input: the new one is judged by the rules alone.
        decision = await gate.authorize(tool, backfilled, ctx, approved_input=approved)
        chain.extend(decision.chain)
    final = decision.model_copy(update={"updated_input": None, "chain": tuple(chain)})
    return Settled(final, tool_input, backfilled, tuple(by))


_WHO = {"hook": "A PermissionRequest hook", "approver": "The approver"}


def _rewriter(decision: PermissionDecision) -> str:
    """Who answered with the new input: a PermissionRequest hook, or else the approver."""
    return "hook" if decision.source == "hook" else "approver"


def _refusal(reason: str, chain: list[str], step: str) -> PermissionDecision:
    return PermissionDecision(behavior="deny", reason=reason, source="governance", chain=(*chain, step))
