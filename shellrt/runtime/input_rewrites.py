"""An input rewritten while asking (``updatedInput``) is judged again, like the model's own.

Why: a PermissionRequest hook or the approver may answer an ask with another input.
Run as given, that input would skip the schema, the tool's validation, the command
analysis and every deny rule. So each new input is parsed, validated and decided
again; an ask on it goes to the hooks and the approver again (the answer given was
for the old input), except when the approver itself wrote it; the PreToolUse hooks
see it first, as they see every input that may run. An input rewritten
`MAX_REWRITES` times in a row is refused: a hook that always rewrites never settles.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from shellrt.permissions import PermissionDecision, PermissionGate
from shellrt.protocol import Tool, ToolContext

__all__ = ["MAX_REWRITES", "PreHooked", "Prepare", "Rehook", "Settled", "authorize_rewrites"]

#: Rewrites in a row a call may go through before it is refused.
MAX_REWRITES = 3

#: Parses, validates and backfills a raw input: (input, backfilled copy) or the error message.
Prepare = Callable[[Any], Awaitable[tuple[BaseModel, BaseModel] | str]]


@dataclass(frozen=True)
class PreHooked:
    """What the PreToolUse hooks made of a new input (they see every input that may run)."""

    tool_input: BaseModel
    backfilled: BaseModel
    #: Their verdict on it (deny/ask count, allow never skips a rule).
    hook_decision: PermissionDecision | None = None
    #: Set when a hook blocked it.
    blocked: str | None = None
    notices: tuple[str, ...] = ()
    additional_context: tuple[str, ...] = ()


#: Runs the PreToolUse hooks on a prepared input (their rewrite prepared too), or the error message.
Rehook = Callable[[BaseModel, BaseModel], Awaitable[PreHooked | str]]


@dataclass(frozen=True)
class Settled:
    """The final decision and the input it was made on (the one to run when allowed)."""

    decision: PermissionDecision
    tool_input: BaseModel
    backfilled: BaseModel
    #: Who rewrote the input on the way, in order ("hook", "approver").
    rewritten_by: tuple[str, ...] = ()
    #: From the PreToolUse hooks run on rewritten inputs: notices for people, context for the model.
    notices: tuple[str, ...] = ()
    additional_context: tuple[str, ...] = ()


async def authorize_rewrites(
    gate: PermissionGate,
    tool: Tool[Any, Any],
    tool_input: BaseModel,
    backfilled: BaseModel,
    ctx: ToolContext,
    *,
    hook_decision: PermissionDecision | None,
    prepare: Prepare,
    rehook: Rehook | None = None,
) -> Settled:
    """Ask ``gate`` about the call, then about every input an answer rewrote it to.

    Each new input is prepared (`Prepare`), shown to the PreToolUse hooks (``rehook``;
    their verdict on the old input does not carry over) and decided again. The
    returned decision never carries ``updated_input``: its input is ``tool_input``.
    A rewrite that is invalid, blocked, or one too many becomes a deny that says why.
    """
    decision = await gate.authorize(tool, backfilled, ctx, hook_decision=hook_decision)
    if decision.updated_input is None:
        return Settled(decision, tool_input, backfilled)  # the usual case: nothing was rewritten
    chain = list(decision.chain)
    by: list[str] = []
    notices: list[str] = []
    context: list[str] = []

    def refused(reason: str, step: str) -> Settled:
        denial = _refusal(reason, chain, step)
        return Settled(denial, tool_input, backfilled, tuple(by), tuple(notices), tuple(context))

    while decision.behavior == "allow" and decision.updated_input is not None:
        who = _rewriter(decision)
        prepared = await prepare(decision.updated_input)
        if isinstance(prepared, str):
            reason = (
                f"{_WHO[who]} answered with an input that is not valid, so the call was not run: {prepared}"
            )
            return refused(reason, f"{who} rewrote the input: invalid")
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
            return refused(reason, "too many rewrites -> deny")
        tool_input, backfilled = new_input, new_backfilled
        approved = backfilled.model_dump(mode="json") if who == "approver" else None
        verdict = None  # the PreToolUse verdict on the old input does not carry over
        if rehook is not None:
            hooked = await rehook(tool_input, backfilled)
            if isinstance(hooked, str):
                return refused(
                    f"A PreToolUse hook rewrote the new input badly: {hooked}", "PreToolUse: invalid"
                )
            notices.extend(hooked.notices)
            context.extend(hooked.additional_context)
            if hooked.blocked is not None:
                return refused(f"Blocked by a PreToolUse hook: {hooked.blocked}", "PreToolUse: blocked")
            if hooked.tool_input is not tool_input:
                chain.append(
                    f"input rewritten by a PreToolUse hook: {hooked.backfilled.model_dump(mode='json')}"
                )
                tool_input, backfilled, approved = hooked.tool_input, hooked.backfilled, None
            verdict = hooked.hook_decision
        decision = await gate.authorize(tool, backfilled, ctx, hook_decision=verdict, approved_input=approved)
        chain.extend(decision.chain)
    final = decision.model_copy(update={"updated_input": None, "chain": tuple(chain)})
    return Settled(final, tool_input, backfilled, tuple(by), tuple(notices), tuple(context))


_WHO = {"hook": "A PermissionRequest hook", "approver": "The approver"}


def _rewriter(decision: PermissionDecision) -> str:
    """Who answered with the new input: a PermissionRequest hook, or else the approver."""
    return "hook" if decision.source == "hook" else "approver"


def _refusal(reason: str, chain: list[str], step: str) -> PermissionDecision:
    return PermissionDecision(behavior="deny", reason=reason, source="governance", chain=(*chain, step))
