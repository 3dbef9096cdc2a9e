"""One tool_use -> exactly one tool_result, whatever happens on the way.

lookup -> schema validation -> tool.validate -> backfill -> PreToolUse hooks ->
permission gate -> call -> PostToolUse hooks -> model result (+ persistence).
Every failure at any step becomes a paired error result whose message tells
the model what to do next. Cancellation is the only thing that propagates; the
orchestrator turns it into a synthetic paired result.
"""

from __future__ import annotations

import difflib
import json
import sys
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import anyio
from pydantic import BaseModel, ValidationError

from shellrt.permissions import HookRunner, PermissionDecision, PermissionGate
from shellrt.permissions.hook_rewrites import observing
from shellrt.permissions.shown import for_person
from shellrt.protocol import (
    ContentBlock,
    ResultEnvelope,
    TextBlock,
    Tool,
    ToolContext,
    ToolExecutionError,
    ToolOutput,
    ToolResultBlock,
    ToolUseBlock,
    empty_output_text,
    error_envelope,
)
from shellrt.protocol.notes import note as shellrt_note
from shellrt.protocol.results import persist_block
from shellrt.protocol.tool import rendered_content
from shellrt.protocol.trusted import trusted
from shellrt.runtime.background_cap import background_refusal
from shellrt.runtime.flat_dump import json_dump
from shellrt.runtime.input_depth import MAX_INPUT_DEPTH, too_deep
from shellrt.runtime.input_rewrites import PreHooked, authorize_rewrites
from shellrt.runtime.input_size import cut_message
from shellrt.runtime.observed_paths import resolve_observed_paths
from shellrt.runtime.raised import answerable, quoted
from shellrt.runtime.registry import ToolRegistry

__all__ = ["CallExecutor", "CallOutcome", "RunSlot", "failed_outcome", "format_validation_error"]


@dataclass
class CallOutcome:
    """The result of one call plus what the orchestrator needs to finish it."""

    envelope: ResultEnvelope
    tool: Tool[Any, Any] | None = None
    #: Ordered session change to apply after the call (or after its parallel batch).
    context_modifier: Callable[[ToolContext], None] | None = None
    #: Notices for people (hook failures); never shown to the model. `CallExecutor.execute`
    #: also appends them to the envelope's UI and audit faces and prints them on stderr.
    notices: list[str] = field(default_factory=list)
    #: The tool's ``call`` ran (False for lookup/validation/hook/permission failures).
    executed: bool = False

    @property
    def is_error(self) -> bool:
        return self.envelope.is_error


#: The most of an unexpected exception's text a result quotes (a hostile input may be in it).
MAX_QUOTED_ERROR = 500


def failed_outcome(
    block: ToolUseBlock,
    tool: Tool[Any, Any] | None,
    exc: BaseException,
    *,
    notices: list[str] | None = None,
    executed: bool = False,
) -> CallOutcome:
    """The paired error result of a call that raised where no step expected it (a tool's
    parse_input, validate, permission hooks, to_model_content...): the turn goes on (round 36)."""
    name = echoed_name(block.name)
    message = (
        f"{name} failed unexpectedly: {quoted(exc, MAX_QUOTED_ERROR)}. This is a fault of the tool, not of the input "
        "format; do not retry the same call: try another way or report it."
    )
    return CallOutcome(
        error_envelope(block.id, block.name, message), tool, notices=notices or [], executed=executed
    )


#: Problems one invalid input's error lists, and the longest name it echoes: every one was listed
#: whole, and 200,000 unknown parameters made a 7.5 MB error, sent whole for a tool that does not
#: persist its results (Read); a 1 MB parameter name was echoed whole (round 28).
MAX_LISTED_PROBLEMS = 10
MAX_ECHOED_NAME = 100


def echoed_name(name: str) -> str:
    """``name`` as an error quotes it: cut at `MAX_ECHOED_NAME` characters."""
    return name if len(name) <= MAX_ECHOED_NAME else name[:MAX_ECHOED_NAME] + "…"


def format_validation_error(tool_name: str, error: ValidationError) -> str:
    """Turn a pydantic error into one message the model can act on (the first
    `MAX_LISTED_PROBLEMS` problems, then how many more)."""
    parts: list[str] = []
    count = error.error_count()
    for item in error.errors(include_url=False)[:MAX_LISTED_PROBLEMS]:
        loc = echoed_name(".".join(str(p) for p in item["loc"])) or "input"
        kind = item["type"]
        ctx = item.get("ctx") or {}
        if kind == "missing":
            parts.append(f"`{loc}` is required")
        elif kind == "extra_forbidden":
            parts.append(f"`{loc}` is not a parameter of {tool_name}")
        elif kind in ("less_than_equal", "less_than") and ctx:
            bound = ctx.get("le", ctx.get("lt"))
            op = "<=" if kind == "less_than_equal" else "<"
            parts.append(f"`{loc}` must be {op} {bound} (got {item.get('input')!r})")
        elif kind in ("greater_than_equal", "greater_than") and ctx:
            bound = ctx.get("ge", ctx.get("gt"))
            op = ">=" if kind == "greater_than_equal" else ">"
            parts.append(f"`{loc}` must be {op} {bound} (got {item.get('input')!r})")
        else:
            parts.append(f"`{loc}`: {item['msg']}")
    if count > len(parts):
        parts.append(f"and {count - len(parts):,} more")
    return f"Invalid input for {tool_name}: " + "; ".join(parts) + ". Fix the input and call the tool again."


#: Given a call's tool and final input, the context its call runs in (`CallExecutor.execute`).
RunSlot = Callable[[Tool[Any, Any], BaseModel], AbstractAsyncContextManager[None]]


class CallExecutor:
    """Runs the single-call lifecycle for one session."""

    def __init__(
        self,
        registry: ToolRegistry,
        gate: PermissionGate,
        hooks: HookRunner,
        *,
        is_loaded: Callable[[Tool[Any, Any], ToolContext], bool] | None = None,
    ) -> None:
        self.registry = registry
        self.gate = gate
        self.hooks = hooks
        self._is_loaded = is_loaded

    async def execute(
        self,
        block: ToolUseBlock,
        ctx: ToolContext,
        *,
        parsed: BaseModel | None = None,
        run_slot: RunSlot | None = None,
    ) -> CallOutcome:
        """Run one tool_use in ``ctx`` (already forked for this call).

        ``parsed``: the block's input as its tool already parsed it (the scheduler
        parses to classify); it is then not parsed again.
        ``run_slot``: the scheduler's say over the final input (after hooks and approvals may
        have rewritten it): the tool's call runs inside the context it returns.
        Notices (a hook that timed out, crashed, is missing or printed garbage) are
        never silent: they reach the UI and audit faces and stderr, not the model.
        """
        try:
            outcome = await self._execute(block, ctx, parsed, run_slot)
        except BaseException as exc:  # any stage of any tool (round 36): a paired error, never a lost turn
            if not answerable(exc):
                raise
            outcome = failed_outcome(block, self.registry.get(block.name), exc)
        if outcome.notices:
            _surface(outcome)
        return outcome

    async def _execute(
        self, block: ToolUseBlock, ctx: ToolContext, parsed: BaseModel | None, run_slot: RunSlot | None
    ) -> CallOutcome:
        tool = self.registry.get(block.name)
        if tool is None:
            return CallOutcome(error_envelope(block.id, block.name, self._unknown_tool_message(block.name)))
        if self._is_loaded is not None and not self._is_loaded(tool, ctx):
            return CallOutcome(
                error_envelope(
                    block.id,
                    tool.name,
                    f"Tool '{tool.name}' is not available to you yet. Use ToolSearch to find and load it "
                    "(for example ToolSearch with query 'select:" + tool.name + "'), then call it again.",
                ),
                tool,
            )
        notices: list[str] = []
        if too_deep(block.input):  # before anything encodes it: a serializer's limit ended the batch
            return CallOutcome(error_envelope(block.id, tool.name, _too_deep(tool.name)), tool)
        cut = cut_message(tool.name, block.input)  # the session cut it: too large to keep (round 39)
        if cut is not None:
            return CallOutcome(error_envelope(block.id, tool.name, cut), tool)
        # 1. schema
        tool_input = parsed if isinstance(parsed, tool.input_model) else self._parse(tool, block.input)
        if isinstance(tool_input, str):
            return CallOutcome(error_envelope(block.id, tool.name, tool_input), tool)
        # 2. semantics
        failure = await self._validate(tool, tool_input, ctx)
        if failure is not None:
            return CallOutcome(error_envelope(block.id, tool.name, failure), tool)
        # 3. backfill a copy; the input is never mutated (hooks see it with its paths resolved)
        backfilled = tool.backfill(tool_input)
        # 4. PreToolUse hooks (none configured for this tool: no payload, no outcome to read)
        hook_decision: PermissionDecision | None = None
        pre_additional: list[str] = []
        if self.hooks.runs_for("PreToolUse", tool.name):
            observed = resolve_observed_paths(backfilled, ctx)
            with observing(partial(self._observed, tool, ctx=ctx)):  # a rewrite is judged resolved too
                pre = await self.hooks.pre_tool_use(tool.name, observed.model_dump(mode="json"), ctx)
            notices.extend(f"hook {n.hook}: {n.message}" for n in pre.notices)
            if pre.blocked_reason is not None:
                return CallOutcome(
                    error_envelope(
                        block.id, tool.name, f"Blocked by a PreToolUse hook: {pre.blocked_reason}"
                    ),
                    tool,
                    notices=notices,
                )
            if pre.updated_input is not None:
                tool_input = self._parse(tool, pre.updated_input)
                if isinstance(tool_input, str):
                    return CallOutcome(
                        error_envelope(
                            block.id, tool.name, "A PreToolUse hook rewrote the input badly: " + tool_input
                        ),
                        tool,
                        notices=notices,
                    )
                failure = await self._validate(tool, tool_input, ctx)
                if failure is not None:
                    return CallOutcome(error_envelope(block.id, tool.name, failure), tool, notices=notices)
                backfilled = tool.backfill(tool_input)
                self.note(block.id, rewritten_by_hook=True)
            hook_decision = pre.decision
            pre_additional = pre.additional_context
        # 5. permission
        # The gate judges the input the model (or a hook) wrote, with the resolution `validate`
        # remembered: rules match that resolved path, and refusals name the path as written.
        # An input an answer rewrote is parsed, validated and decided again (`authorize_rewrites`).
        settled = await authorize_rewrites(
            self.gate,
            tool,
            tool_input,
            backfilled,
            ctx,
            hook_decision=hook_decision,
            prepare=lambda raw: self._prepare(tool, raw, ctx),
            rehook=lambda new, copy: self._rehook(tool, new, copy, ctx),
        )
        decision: PermissionDecision = settled.decision
        notices.extend(settled.notices)
        pre_context = _hook_notes("PreToolUse", [*pre_additional, *settled.additional_context])
        notices.extend(_request_notices(decision))
        # The chain as is (a tuple, a memoised decision's the same each call: its JSON is kept, session.py).
        self.note(block.id, decision=decision.behavior, reason=decision.reason, chain=decision.chain)
        if decision.behavior != "allow":
            return CallOutcome(
                error_envelope(
                    block.id, tool.name, decision.reason or f"Permission to use {tool.name} was denied."
                ),
                tool,
                notices=notices,
            )
        tool_input, backfilled = settled.tool_input, settled.backfilled
        if settled.rewritten_by:
            self.note(block.id, rewritten_while_asking_by=list(settled.rewritten_by))
            if "approver" in settled.rewritten_by:
                self.note(block.id, rewritten_by_approver=True)
        # 6. call, in the scheduler's slot for the final input (waiting for it stays cancellable)
        if run_slot is None and tool.interrupt_behavior != "block" and not ctx.abort.is_set():
            # A lone cancel-type call not interrupted: what `_start` would do, without its frame.
            return await self._call(block, tool, tool_input, backfilled, pre_context, notices, ctx)
        call = partial(self._call, block, tool, tool_input, backfilled, pre_context, notices, ctx)
        if run_slot is None:
            return await self._start(block, tool, notices, ctx, call)
        async with run_slot(tool, tool_input):
            return await self._start(block, tool, notices, ctx, call)

    async def _start(
        self,
        block: ToolUseBlock,
        tool: Tool[Any, Any],
        notices: list[str],
        ctx: ToolContext,
        call: Callable[[], Awaitable[CallOutcome]],
    ) -> CallOutcome:
        """Not when an interrupt came while the hooks, the approval or the slot wait ran: "block"
        keeps a call that started from being cut off half-way, it never starts one the user stopped."""
        if ctx.abort.is_set():
            from shellrt.runtime.orchestration import NOT_RUN_INTERRUPTED

            return CallOutcome(
                error_envelope(block.id, tool.name, NOT_RUN_INTERRUPTED), tool, notices=notices
            )
        if tool.interrupt_behavior != "block":
            return await call()
        # A block-type call that started finishes whole (post hooks and result too): a cancel of the
        # caller's task (an MCP client's) takes effect before this point or after it, never inside.
        with anyio.CancelScope(shield=True):
            called = await call()
        return called

    async def _call(
        self,
        block: ToolUseBlock,
        tool: Tool[Any, Any],
        tool_input: BaseModel,
        backfilled: BaseModel,
        pre_context: list[str],
        notices: list[str],
        ctx: ToolContext,
    ) -> CallOutcome:
        """Steps 6-8: the call, its post hooks, its model result."""
        # One more background task than the cap: refused here, in the call's slot, so calls that
        # run side by side count each other (round 12).
        refusal = background_refusal(tool_input, ctx)
        if refusal is not None:
            return CallOutcome(error_envelope(block.id, tool.name, refusal), tool, notices=notices)
        # Where it ran, too: earlier calls move the session's directory (``./run.sh`` after a ``cd``).
        self.note(block.id, executed_input=json_dump(tool_input), cwd=ctx.cwd)
        try:
            return await self._called(block, tool, tool_input, backfilled, pre_context, notices, ctx)
        except BaseException as exc:  # the call began: its result is an error, still marked executed
            if not answerable(exc):
                raise
            return failed_outcome(block, tool, exc, notices=notices, executed=True)

    async def _called(
        self,
        block: ToolUseBlock,
        tool: Tool[Any, Any],
        tool_input: BaseModel,
        backfilled: BaseModel,
        pre_context: list[str],
        notices: list[str],
        ctx: ToolContext,
    ) -> CallOutcome:
        """The call, its post hooks, its model result (`_call` answers anything these raise)."""
        try:
            output = await tool.call(tool_input, ctx)
        except ToolExecutionError as exc:
            failure_extra, _ = await self._post(tool, backfilled, str(exc), ctx, failed=True, notices=notices)
            message = "\n\n".join([str(exc), *pre_context, *failure_extra])
            return CallOutcome(
                error_envelope(block.id, tool.name, message), tool, notices=notices, executed=True
            )
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as exc:
            error = f"{tool.name} failed unexpectedly: {quoted(exc, MAX_QUOTED_ERROR)}"
            # PostToolUseFailure hooks see the error; their additionalContext reaches the model with it.
            failure_extra, _ = await self._post(tool, backfilled, error, ctx, failed=True, notices=notices)
            message = "\n\n".join([error, *pre_context, *failure_extra])
            return CallOutcome(
                error_envelope(block.id, tool.name, message), tool, notices=notices, executed=True
            )
        return await self._finish(block, tool, output, backfilled, pre_context, notices, ctx)

    async def _finish(
        self,
        block: ToolUseBlock,
        tool: Tool[Any, Any],
        output: ToolOutput[Any],
        backfilled: BaseModel,
        pre_context: list[str],
        notices: list[str],
        ctx: ToolContext,
    ) -> CallOutcome:
        """Steps 7-8 of a call that returned: its post hooks, its model result."""
        # 7. post hooks (a PostToolUse hook may replace an MCP tool's output: updatedMCPToolOutput);
        # none configured for this tool: nothing to build or await
        post_extra: list[str] = []
        replacement: tuple[Any, str] | None = None
        if self.hooks.runs_for("PostToolUseFailure" if output.is_error else "PostToolUse", tool.name):
            post_extra, replacement = await self._post(
                tool, backfilled, output.data, ctx, failed=output.is_error, notices=notices
            )
        data = (
            self._replace_mcp_output(block.id, tool, output.data, replacement, notices)
            if replacement is not None
            else output.data
        )
        # 8. model result
        extra = [*pre_context, *post_extra] if post_extra else pre_context
        envelope = self._envelope(block.id, tool, data, output.is_error, extra, ctx)
        return CallOutcome(
            envelope, tool, context_modifier=output.context_modifier, notices=notices, executed=True
        )

    def note(self, tool_use_id: str, **facts: Any) -> None:
        """Hear what happened to a call on its way (for a transcript); the base executor forgets it."""

    # --- steps ----------------------------------------------------------------
    def _unknown_tool_message(self, name: str) -> str:
        # Never name a tool the gate hides (denied outright): the model must not learn it exists.
        names = [t.name for t in self.registry.all_tools() if self.gate.is_visible(t)]
        close = difflib.get_close_matches(name, names, n=1)
        hint = f" Did you mean '{close[0]}'?" if close else ""
        return f"Unknown tool '{echoed_name(name)}'.{hint} Available tools: {', '.join(names)}."

    @staticmethod
    def _parse(tool: Tool[Any, Any], raw: Any) -> BaseModel | str:
        if not isinstance(raw, dict):
            return (
                f"Invalid input for {tool.name}: expected a JSON object of parameters, got "
                f"{type(raw).__name__}. Call the tool again with an object."
            )
        if too_deep(raw):  # a rewrite by a hook or an approver too
            return _too_deep(tool.name)
        try:
            parsed: BaseModel = tool.parse_input(raw)
        except ValidationError as exc:
            return format_validation_error(tool.name, exc)
        return parsed

    async def _prepare(
        self, tool: Tool[Any, Any], raw: Any, ctx: ToolContext
    ) -> tuple[BaseModel, BaseModel] | str:
        """A rewritten input as the model's own goes: parsed, validated, backfilled (or why not)."""
        parsed = self._parse(tool, raw)
        if isinstance(parsed, str):
            return parsed
        failure = await self._validate(tool, parsed, ctx)
        return failure if failure is not None else (parsed, tool.backfill(parsed))

    async def _observed(self, tool: Tool[Any, Any], raw: dict[str, Any], *, ctx: ToolContext) -> dict[str, Any] | str:
        """A hook's rewrite as the hooks see the model's input: parsed, validated, backfilled, its
        paths resolved (or why it is no valid input): `shellrt.permissions.hook_rewrites`."""
        prepared = await self._prepare(tool, raw, ctx)
        if isinstance(prepared, str):
            return prepared
        return resolve_observed_paths(prepared[1], ctx).model_dump(mode="json")

    async def _rehook(
        self, tool: Tool[Any, Any], tool_input: BaseModel, backfilled: BaseModel, ctx: ToolContext
    ) -> PreHooked | str:
        """The PreToolUse hooks on an input an answer rewrote (as on the model's own input)."""
        if not self.hooks.runs_for("PreToolUse", tool.name):
            return PreHooked(tool_input, backfilled)
        observed = resolve_observed_paths(backfilled, ctx)
        with observing(partial(self._observed, tool, ctx=ctx)):
            pre = await self.hooks.pre_tool_use(tool.name, observed.model_dump(mode="json"), ctx)
        notices = tuple(f"hook {n.hook}: {n.message}" for n in pre.notices)
        context = tuple(pre.additional_context)
        if pre.blocked_reason is not None:
            return PreHooked(tool_input, backfilled, blocked=pre.blocked_reason, notices=notices)
        if pre.updated_input is not None:
            prepared = await self._prepare(tool, pre.updated_input, ctx)
            if isinstance(prepared, str):
                return prepared
            tool_input, backfilled = prepared
        return PreHooked(tool_input, backfilled, pre.decision, notices=notices, additional_context=context)

    @staticmethod
    async def _validate(tool: Tool[Any, Any], tool_input: BaseModel, ctx: ToolContext) -> str | None:
        try:
            result = await tool.validate(tool_input, ctx)
        except ToolExecutionError as exc:
            return str(exc)
        return None if result.ok else (result.message or f"{tool.name} refused this input.")

    async def _post(
        self,
        tool: Tool[Any, Any],
        backfilled: BaseModel,
        response: Any,
        ctx: ToolContext,
        *,
        failed: bool,
        notices: list[str],
    ) -> tuple[list[str], tuple[Any, str] | None]:
        """Run the post hooks: (context for the model, a hook's MCP output replacement and its hook)."""
        if not self.hooks.runs_for("PostToolUseFailure" if failed else "PostToolUse", tool.name):
            return [], None  # what the hooks would see (input and output as JSON) is not built for no one
        payload = response.model_dump(mode="json") if isinstance(response, BaseModel) else _jsonable(response)
        observed = resolve_observed_paths(backfilled, ctx)
        post = await self.hooks.post_tool_use(
            tool.name, observed.model_dump(mode="json"), payload, ctx, failed=failed
        )
        notices.extend(f"hook {n.hook}: {n.message}" for n in post.notices)
        replacement = None
        if post.updated_mcp_tool_output is not None:
            replacement = (post.updated_mcp_tool_output, post.updated_mcp_tool_output_by or "a hook")
        event = "PostToolUseFailure" if failed else "PostToolUse"
        extra = _hook_notes(event, post.additional_context)
        if post.feedback:
            extra.insert(0, shellrt_note(f"{event} hook feedback: {post.feedback}"))
        return extra, replacement

    def _replace_mcp_output(
        self,
        tool_use_id: str,
        tool: Tool[Any, Any],
        data: Any,
        replacement: tuple[Any, str],
        notices: list[str],
    ) -> Any:
        """Apply a PostToolUse hook's ``updatedMCPToolOutput`` (MCP tools only); the transcript keeps both."""
        from shellrt.tools.mcp.proxy import McpCallOutput, replaced_output

        value, hook = replacement
        if not isinstance(data, McpCallOutput):
            notices.append(f"hook {hook}: updatedMCPToolOutput ignored: {tool.name} is not an MCP tool")
            return data
        try:
            new = replaced_output(data, value)
        except ValueError as exc:
            notices.append(f"hook {hook}: updatedMCPToolOutput ignored: {exc}")
            return data
        self.note(
            tool_use_id,
            mcp_output_replaced_by_hook=hook,
            original_output=[b.model_dump(mode="json") for b in data.content],
        )
        return new

    @staticmethod
    def _envelope(
        tool_use_id: str,
        tool: Tool[Any, Any],
        data: Any,
        is_error: bool,
        extra_context: list[str],
        ctx: ToolContext,
    ) -> ResultEnvelope:
        content: str | list[ContentBlock] = tool.to_model_content(data)
        ui, audit = _person_faces(tool, data, content)
        if not content or (isinstance(content, str) and not content.strip()):
            content = empty_output_text(tool.name)
        if extra_context:
            note = "\n".join(extra_context)
            content = f"{content}\n\n{note}" if isinstance(content, str) else [*content, TextBlock(text=note)]
        text = (
            content
            if isinstance(content, str)
            else "\n".join(b.text for b in content if isinstance(b, TextBlock))
        )
        # Text results of shellrt's own strings (every shell call's) are built without running the
        # validator again (`trusted`); a tool's blocks or renderings of other types are validated.
        plain = type(content) is str and type(ui) is str and type(audit) is str and type(is_error) is bool
        build = trusted if plain and type(tool.name) is str and type(tool_use_id) is str else _validated
        envelope = build(
            ResultEnvelope,
            {
                "tool_use_id": tool_use_id,
                "tool_name": tool.name,
                "model": build(
                    ToolResultBlock,
                    {
                        "type": "tool_result",
                        "tool_use_id": tool_use_id,
                        "content": content,
                        "is_error": is_error,
                    },
                ),
                "ui": ui,
                "audit": audit,
                "persisted_path": None,
                "total_chars": len(text),
                "exit_code": _exit_code(data),
            },
        )
        limit = tool.max_result_chars
        if limit is not None and len(text) > limit:
            envelope = persist_block(
                envelope, Path(ctx.session_dir), commands_see=tool.results_seen_by_commands
            )
        return envelope


def _hook_notes(event: str, texts: Sequence[str]) -> list[str]:
    """Hooks' ``additionalContext`` as shellrt notes (round 23): it follows the tool's output in
    one text, and output that starts like a note is marked, so the command cannot pass for the hook."""
    return [shellrt_note(f"{event} hook context: {text}") for text in texts]


def _too_deep(tool_name: str) -> str:
    return (
        f"Invalid input for {tool_name}: arrays and objects nested more than {MAX_INPUT_DEPTH} levels "
        "deep; send a flatter input (or a string holding the deep part)."
    )


#: How `RulesGate` records PermissionRequest hook notices in a decision's chain.
_REQUEST_NOTICE = "PermissionRequest notice:"


def _request_notices(decision: PermissionDecision) -> tuple[str, ...]:
    """The PermissionRequest hook notices of a decision's chain. A decision is frozen and the
    engine hands a remembered allow back as the same object, so its notices (none: no hook
    answered it) are read off its chain once, not on every call that reuses it."""
    found = _notices_of.get(id(decision))
    if found is not None and found[0] is decision:
        return found[1]
    notices = tuple(
        "hook " + step[len(_REQUEST_NOTICE) :].strip()
        for step in decision.chain
        if step.startswith(_REQUEST_NOTICE)
    )
    if len(_notices_of) >= 256:
        _notices_of.clear()
    _notices_of[id(decision)] = (decision, notices)
    return notices


#: id(decision) -> (the decision, its request notices); the decision is kept, so its id is not
#: reused by another object while the entry lives.
_notices_of: dict[int, tuple[PermissionDecision, tuple[str, ...]]] = {}


def _surface(outcome: CallOutcome) -> None:
    """Append the notices to the UI and audit faces and print them on stderr."""
    lines = [f"[notice] {n}" for n in outcome.notices]
    text = "\n".join(lines)
    env = outcome.envelope
    outcome.envelope = env.model_copy(
        update={
            "ui": f"{env.ui}\n{text}" if env.ui else text,
            "audit": f"{env.audit}\n{text}" if env.audit else text,
        }
    )
    for notice in outcome.notices:  # a hook's stderr may echo the model's input: shown, never obeyed
        print(
            f"shellrt: hook notice ({env.tool_name} {env.tool_use_id}): {for_person(notice)}",
            file=sys.stderr,
            flush=True,
        )


def _person_faces(tool: Tool[Any, Any], data: Any, content: str | list[ContentBlock]) -> tuple[str, str]:
    """(UI text, audit text) of a result. A tool that keeps `Tool`'s own renderings gets them
    from the model content it already made (they would make it twice more: render_result from
    to_model_content, audit_text from render_result)."""
    kind = type(tool)
    ui = rendered_content(content) if kind.render_result is Tool.render_result else tool.render_result(data)
    audit = ui if kind.audit_text is Tool.audit_text else tool.audit_text(data)
    return ui, audit


_Model = TypeVar("_Model", bound=BaseModel)


def _validated(cls: type[_Model], values: dict[str, Any]) -> _Model:
    """`trusted`'s other side: a model built by its validator (values of any type)."""
    return cls.model_validate(values)


def _exit_code(data: Any) -> int | None:
    """A shell tool's exit code (its output model's ``exit_code``), carried on the envelope."""
    code = getattr(data, "exit_code", None)
    return code if isinstance(code, int) and not isinstance(code, bool) else None


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return str(value)
    return value
