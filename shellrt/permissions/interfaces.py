"""The runtime's view of governance: a permission gate, an approver and hooks.

The runtime depends only on these interfaces. `BasicGate` and `NoHooks` are
the safe built-in defaults (read-only allowed, everything else asked, no one
to ask -> denied); the rules engine and the command-hook runner implement the
same interfaces with Claude-Code-compatible settings.
"""

from __future__ import annotations

import abc
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from shellrt.protocol import PermissionResult, Tool, ToolContext

__all__ = [
    "ApprovalRequest",
    "ApprovalResponse",
    "Approver",
    "BasicGate",
    "CommandPart",
    "CommandPartsTool",
    "HookNotice",
    "HookRunner",
    "NoHooks",
    "PermissionDecision",
    "PermissionGate",
    "PermissionRequestOutcome",
    "PostToolUseOutcome",
    "PreToolUseOutcome",
]


class PermissionDecision(BaseModel):
    """A final decision on one call, with the chain of reasons that produced it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    behavior: Literal["allow", "deny", "ask"]
    #: Human-readable reason; names the rule and its source when a rule decided.
    reason: str = ""
    #: The rule that decided (e.g. ``Bash(git status:*)``) and where it came from.
    rule: str | None = None
    source: str | None = None
    #: Replacement input chosen while asking (the person edited it).
    updated_input: dict[str, Any] | None = None
    #: Every step considered, in order (for ``shellrt permissions check``).
    chain: tuple[str, ...] = ()


@dataclass(frozen=True)
class CommandPart:
    """One part of a shell command as the rules engine judges it (see ``docs/permissions.md``).

    A shell tool hands the engine these so that rules see everything that acts,
    not only command words: the environment a part sets, the files its
    redirections write, the paths it reads.
    """

    #: Normalised command text that ``Bash(...)`` rules match.
    text: str
    #: argv as the analysis evaluated it (dynamic words keep their source text).
    argv: tuple[str, ...] = ()
    #: Normalised static command name (``rm`` for ``/bin/rm`` or ``\\rm``); "" when not static.
    name: str = ""
    #: The part only assigns variables (``X=1``, ``export X=1``): it runs no program.
    assignment_only: bool = False
    #: Variables the part sets for itself or for later parts (prefixes, assignments, ``export``).
    env_names: tuple[str, ...] = ()
    #: Started in the background with ``&``.
    background: bool = False
    #: Absolute, resolved targets its redirections write ("" = a target that is not known).
    writes: tuple[str, ...] = ()
    #: Absolute, resolved paths it may read ("" = a path that is not known).
    reads: tuple[str, ...] = ()
    #: Files the command's programs write (``cp x y`` -> y), for deny and ask rules only:
    #: permission to run the program is permission for its own writes.
    program_writes: tuple[str, ...] = ()
    #: Walks directories it reads (``grep -r``, ``find``).
    recursive: bool = False
    #: The tool judges this part read-only *and* inside the allowed reads (its own check).
    read_only: bool = False
    #: Why it is not read-only (for reasons shown to people).
    why_not: str = ""
    #: Source text of the command's assignments (``GIT_PAGER='rm f'``): a program may run such a
    #: value as a command, so deny and ask rules search them as they search the words.
    assigned: tuple[str, ...] = ()
    #: Set when the part would run a program the workspace itself names (a hostile
    #: repository's git drivers): no allow rule covers it.
    hazard: str = ""
    #: The directories the part may run in (the session's, and each its ``cd``s reach), resolved;
    #: empty when not known. Relative names in it (``./run.sh``) mean files there: a rule
    #: remembered from an approval covers the part only in the directories it was approved in.
    dirs: tuple[str, ...] = ()
    #: Its output redirections whose target is known only at run time, as written (``> "$d/ls"``;
    #: each a "" in ``writes``): their static pieces may name a place a later part finds code in.
    write_words: tuple[str, ...] = ()
    #: Where its standard input may come from: ``<<`` (a here-document or here-string), ``|`` (it is
    #: in a pipeline), or a file as written (``< s``); empty when it is inherited or not known.
    stdin: tuple[str, ...] = ()
    #: Why the part runs code no rule reads once a link of the workspace is read as what it leads to
    #: (``bash s`` with ``s -> /dev/stdin``); "" when it does not. Judged as ``bash /dev/stdin`` is.
    linked_code: str = ""


@runtime_checkable
class CommandPartsTool(Protocol):
    """A shell tool whose calls the engine judges part by part."""

    def command_parts(self, tool_input: Any, ctx: ToolContext) -> list[CommandPart] | None:
        """The parts of this call, or None when the command could not be split (never allowed by rules)."""


class ApprovalRequest(BaseModel):
    """What a person (or an approver callback) is asked about."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    tool_name: str
    tool_input: dict[str, Any]
    #: One human line (`Tool.describe`).
    description: str
    reason: str
    #: Rules that "allow always" would save (e.g. ``Bash(npm run test:*)``).
    suggested_rules: list[str] = Field(default_factory=list)
    #: Where the call runs: the session's working directory, which the model's earlier calls may
    #: have moved unasked (``cd tools``): ``./run.sh`` there is ``tools/run.sh``. Shown to the person.
    cwd: str = ""


class ApprovalResponse(BaseModel):
    """The answer to an `ApprovalRequest`."""

    model_config = ConfigDict(extra="forbid")

    behavior: Literal["allow", "deny"]
    #: Shown to the model on deny ("use the test script instead").
    message: str = ""
    updated_input: dict[str, Any] | None = None
    #: ``once``: this call only; ``session`` / ``project``: save the suggested rules there.
    remember: Literal["once", "session", "project"] = "once"


#: An async callback that answers permission asks (CLI prompt, MCP elicitation, API user).
Approver = Callable[[ApprovalRequest], Awaitable[ApprovalResponse]]


class PermissionGate(abc.ABC):
    """Decides whether one validated call may run; asks when it must."""

    @abc.abstractmethod
    async def authorize(
        self,
        tool: Tool[Any, Any],
        tool_input: Any,
        ctx: ToolContext,
        *,
        hook_decision: PermissionDecision | None = None,
        approved_input: dict[str, Any] | None = None,
    ) -> PermissionDecision:
        """Return a final ``allow`` or ``deny`` (asking the approver in between if needed).

        ``hook_decision`` is a PreToolUse hook's verdict: its deny/ask count,
        its allow never skips deny or ask rules. ``approved_input``: an input the
        approver itself wrote while answering for this call (``tool_input`` as JSON);
        an ask on exactly that input counts as answered, deny rules still apply.
        """

    def is_visible(self, tool: Tool[Any, Any]) -> bool:
        """False when a rule denies the tool outright (it is then left out of ``tools[]``)."""
        return True

    def barred_addresses(self, tool_name: str) -> tuple[tuple[str, str, bool], ...]:
        """(address, range or name, the rule as written, whether it is an ask rule) for each deny
        or ask rule of ``tool_name`` that names an address, and each deny rule naming a host: a tool
        that resolves names itself (WebFetch) refuses a DNS answer in one (or a denied name's), as
        the rules judged only the name; an ask rule was asked when the URL named the address itself
        (round 28). None unless the gate has rules."""
        return ()


def _local_read(tool: Tool[Any, Any], tool_input: Any) -> bool:
    """Read-only and not open world: WebFetch changes nothing here but sends what the model put
    in its URL to any host (round 15), so like the engine's step 6 it is asked, never assumed."""
    try:
        return bool(tool.is_read_only(tool_input)) and not tool.is_open_world(tool_input)
    except Exception:
        return False


class BasicGate(PermissionGate):
    """Default without settings: the tool's own check, local read-only calls allowed, the rest asked.

    With no approver, an ask is denied (fail closed).
    """

    def __init__(self, approver: Approver | None = None) -> None:
        self.approver = approver

    async def authorize(
        self,
        tool: Tool[Any, Any],
        tool_input: Any,
        ctx: ToolContext,
        *,
        hook_decision: PermissionDecision | None = None,
        approved_input: dict[str, Any] | None = None,
    ) -> PermissionDecision:
        if hook_decision is not None and hook_decision.behavior == "deny":
            return hook_decision
        own: PermissionResult = await tool.check_permissions(tool_input, ctx)
        if own.behavior == "deny":
            return PermissionDecision(behavior="deny", reason=own.reason or f"{tool.name} refused this call")
        if approved_input is not None and approved_input == tool_input.model_dump(mode="json"):
            return PermissionDecision(
                behavior="allow", reason="approved by the user (who wrote this input)", source="user"
            )
        forced_ask = hook_decision is not None and hook_decision.behavior == "ask"
        if not forced_ask and own.behavior == "allow":
            return PermissionDecision(
                behavior="allow", reason=own.reason or "allowed by the tool's own check"
            )
        if not forced_ask and own.behavior == "passthrough" and _local_read(tool, tool_input):
            return PermissionDecision(behavior="allow", reason="read-only call")
        reason = (
            (hook_decision.reason if forced_ask and hook_decision else "") or own.reason or "needs approval"
        )
        if self.approver is None:
            return PermissionDecision(
                behavior="deny",
                reason=f"Permission to use {tool.name} was not granted: {reason}. No one is available to "
                "approve it (headless); add an allow rule or run with a permission mode that allows it.",
            )
        answer = await self.approver(
            ApprovalRequest(
                tool_name=tool.name,
                tool_input=tool_input.model_dump(mode="json"),
                description=tool.describe(tool_input),
                reason=reason,
                cwd=ctx.cwd,
            )
        )
        if answer.behavior == "allow":
            return PermissionDecision(
                behavior="allow", reason="approved", source="user", updated_input=answer.updated_input
            )
        return PermissionDecision(behavior="deny", reason=answer.message or "The user denied this call.")


class HookNotice(BaseModel):
    """A message from the hook system (a hook crashed, timed out, printed garbage)."""

    model_config = ConfigDict(extra="forbid")
    hook: str
    message: str


class PreToolUseOutcome(BaseModel):
    """Combined answer of every matching PreToolUse hook (most restrictive wins)."""

    model_config = ConfigDict(extra="forbid")

    #: Set when a hook blocked the call; shown to the model.
    blocked_reason: str | None = None
    decision: PermissionDecision | None = None
    updated_input: dict[str, Any] | None = None
    additional_context: list[str] = Field(default_factory=list)
    notices: list[HookNotice] = Field(default_factory=list)


class PostToolUseOutcome(BaseModel):
    """Combined answer of PostToolUse / PostToolUseFailure hooks."""

    model_config = ConfigDict(extra="forbid")

    #: Set when a hook flagged the result (exit 2): appended to the model's result.
    feedback: str | None = None
    additional_context: list[str] = Field(default_factory=list)
    notices: list[HookNotice] = Field(default_factory=list)
    #: ``hookSpecificOutput.updatedMCPToolOutput`` (PostToolUse): replaces an MCP tool's output.
    updated_mcp_tool_output: Any = None
    #: The hook that gave it (for the transcript).
    updated_mcp_tool_output_by: str | None = None


class PermissionRequestOutcome(BaseModel):
    """Combined answer of PermissionRequest hooks (run when a call would be asked).

    ``behavior`` None: no hook answered, so the approver (or, headless, a deny) decides.
    """

    model_config = ConfigDict(extra="forbid")

    behavior: Literal["allow", "deny"] | None = None
    #: Why (shown to the model on deny).
    message: str = ""
    updated_input: dict[str, Any] | None = None
    notices: list[HookNotice] = Field(default_factory=list)


class HookRunner(abc.ABC):
    """Runs configured hooks around a call."""

    @abc.abstractmethod
    async def pre_tool_use(
        self, tool_name: str, tool_input: dict[str, Any], ctx: ToolContext
    ) -> PreToolUseOutcome:
        """Before permission is decided; may block, rewrite input, or give a decision."""

    @abc.abstractmethod
    async def post_tool_use(
        self,
        tool_name: str,
        tool_input: dict[str, Any],
        tool_response: Any,
        ctx: ToolContext,
        *,
        failed: bool,
    ) -> PostToolUseOutcome:
        """After the call (``failed``: PostToolUseFailure)."""

    async def permission_request(
        self, tool_name: str, tool_input: dict[str, Any], ctx: ToolContext, *, reason: str = ""
    ) -> PermissionRequestOutcome:
        """When a call would be asked: a hook may answer instead of a person. Default: no answer."""
        return PermissionRequestOutcome()

    def runs_for(self, event: str, tool_name: str) -> bool:
        """Whether a hook may run for ``event`` on ``tool_name``; False lets the runtime skip
        building the hook payload (a call's input and output as JSON). Default: True."""
        return True


class NoHooks(HookRunner):
    """No hooks configured."""

    def runs_for(self, event: str, tool_name: str) -> bool:
        return False

    async def pre_tool_use(
        self, tool_name: str, tool_input: dict[str, Any], ctx: ToolContext
    ) -> PreToolUseOutcome:
        return PreToolUseOutcome()

    async def post_tool_use(
        self,
        tool_name: str,
        tool_input: dict[str, Any],
        tool_response: Any,
        ctx: ToolContext,
        *,
        failed: bool,
    ) -> PostToolUseOutcome:
        return PostToolUseOutcome()
