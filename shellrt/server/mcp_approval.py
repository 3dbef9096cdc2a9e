"""Permission asks answered by the MCP client's user, through elicitation.

The Runtime takes one `Approver` for the whole session, but an ask belongs to
the MCP request that caused it. The server puts each request's context in a
context variable (anyio copies it into the tasks the runtime spawns), and
`elicitation_approver` finds it there. No request, no elicitation capability,
or any failure to ask -> deny: a permission ask never turns into an allow by
accident (fail closed). No answer within `approval_timeout` seconds -> deny: the SDK waits for an
elicitation without end, and a client whose user never answered held the call (and the agent)
forever (red team round 25).
"""

from __future__ import annotations

import contextvars
import logging
from typing import Any

import anyio
import mcp.types as mt

from shellrt.permissions import ApprovalRequest, ApprovalResponse
from shellrt.permissions._approval_deadline import approval_timeout, unanswered
from shellrt.permissions.approvers import answers_concurrently
from shellrt.permissions.shown import ascii_form, beginning, for_person, markdown_literal, tall_rows

__all__ = ["APPROVAL_SCHEMA", "approval_text", "approval_timeout", "current_request", "elicitation_approver"]

log = logging.getLogger("shellrt.mcp")

#: The MCP request being served (a ``ServerRequestContext``), or None outside a call.
current_request: contextvars.ContextVar[Any] = contextvars.ContextVar("shellrt_mcp_request", default=None)

ALLOW = "allow once"
DENY = "deny"

#: Elicitation forms are flat objects of primitives; one choice plus an optional note for the agent.
APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "decision": {
            "type": "string",
            "title": "Decision",
            "description": "Allow this one call, or deny it.",
            "enum": [ALLOW, DENY],
        },
        "message": {
            "type": "string",
            "title": "Message to the agent (optional)",
            "description": "Shown to the agent when you deny, e.g. what to do instead.",
        },
    },
    "required": ["decision"],
}


def _client_can_elicit(ctx: Any) -> bool:
    try:
        return bool(
            ctx.session.check_client_capability(mt.ClientCapabilities(elicitation=mt.ElicitationCapability()))
        )
    except Exception:
        return False


def _no_one_to_ask(request: ApprovalRequest, why: str) -> ApprovalResponse:
    return ApprovalResponse(
        behavior="deny",
        message=(
            f"Permission to use {request.tool_name} was not granted: {request.reason}. {why} Ask the user to "
            "add an allow rule (e.g. shellrt serve --allow 'Bash(npm test:*)') or to choose another --mode."
        ),
    )


def approval_text(request: ApprovalRequest) -> str:
    """The elicitation message: what runs and why it asks, as a person must read it.

    The model (and a hostile repository, through the analysis' reasons) chose this text, and a
    client may render the message as Markdown: every part of it that is not shellrt's own goes in
    a code block (`markdown_literal`), which a renderer shows verbatim and a plain-text client
    shows as is; controls and layout are escaped first (`for_person`), text with characters
    outside ASCII is shown again in ASCII (`ascii_form`), and a call taller than a dialog
    repeats how it begins at the end.
    """
    shown = for_person(request.description)
    parts = ["shellrt wants to run (verbatim in the code block; `|` starts a new line of it, `↪` continues one):"]
    parts.append(markdown_literal(shown))
    in_ascii = ascii_form(shown)
    if in_ascii is not None:
        parts += ["It has characters outside ASCII; the same in ASCII:", markdown_literal(in_ascii)]
    if request.cwd:  # earlier calls may have moved it: ``./run.sh`` means the file there
        parts += ["In directory:", markdown_literal(for_person(request.cwd))]
    parts += ["Why it needs approval:", markdown_literal(for_person(request.reason))]
    if request.suggested_rules:
        parts += [
            "To always allow this, add a rule such as:",
            # One line, as on the terminal (round 23): a rule's line break started bare lines.
            markdown_literal(for_person(", ".join(request.suggested_rules), one_line=True)),
        ]
    rows = tall_rows(shown)
    if rows is not None:
        parts += [
            f"(the call above fills {rows:,} lines: read all of it before answering; it begins:)",
            markdown_literal(beginning(shown)),
        ]
    return "\n".join(parts)


@answers_concurrently  # each ask is its own dialog, answered for its request; one stuck blocks no other
async def elicitation_approver(request: ApprovalRequest) -> ApprovalResponse:
    """Ask the current MCP client's user (form elicitation: allow once / deny)."""
    ctx = current_request.get()
    if ctx is None:
        return _no_one_to_ask(request, "No MCP request is active to ask through.")
    if not _client_can_elicit(ctx):
        return _no_one_to_ask(
            request, "The MCP client does not support elicitation, so no one can approve it."
        )
    text = approval_text(request)
    try:
        deadline = approval_timeout()
    except ValueError as exc:  # changed after start: fail closed, saying what to fix
        return _no_one_to_ask(request, f"{exc}.")
    answer = None
    try:
        with anyio.move_on_after(deadline):
            answer = await ctx.session.elicit_form(text, APPROVAL_SCHEMA, related_request_id=ctx.request_id)
    except Exception as exc:
        log.info("elicitation for %s failed: %r", request.tool_name, exc)
        return _no_one_to_ask(request, f"Asking the MCP client failed ({type(exc).__name__}: {exc}).")
    if answer is None:
        log.info("elicitation for %s got no answer within %g s", request.tool_name, deadline)
        return _no_one_to_ask(request, unanswered(deadline))
    content = answer.content or {}
    if answer.action == "accept" and content.get("decision") == ALLOW:
        return ApprovalResponse(behavior="allow")
    note = str(content.get("message") or "").strip()
    if answer.action == "accept":
        reason = "The user denied this call."
    elif answer.action == "decline":
        reason = "The user declined to approve this call."
    else:
        reason = "The user dismissed the approval request, so the call was not run."
    return ApprovalResponse(behavior="deny", message=f"{reason} {note}".strip())


def _can_ask() -> bool:
    """Whether a person can be asked now (the gate pins an unpinned MCP rule on first use when
    not, as headless: round 21)."""
    ctx = current_request.get()
    return ctx is not None and _client_can_elicit(ctx)


elicitation_approver.can_ask = _can_ask  # type: ignore[attr-defined]
