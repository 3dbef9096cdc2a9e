"""The Tool protocol: one object answering the model, the runtime, the user and governance.

Defaults are conservative: not read-only, not concurrency-safe, not
destructive, not open-world. A tool that touches the environment (processes,
files, network) must define ``check_permissions`` — a concrete subclass that
does not is rejected when the class is created (`ToolDefinitionError`), not
when it first runs.
"""

from __future__ import annotations

import abc
import inspect
import json
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Literal, TypeVar, cast

from pydantic import BaseModel

from shellrt.protocol.context import ToolContext
from shellrt.protocol.control_escape import escape_controls
from shellrt.protocol.errors import ToolDefinitionError
from shellrt.protocol.messages import ContentBlock
from shellrt.protocol.permission import PermissionResult, PermissionSubject

__all__ = ["InterruptBehavior", "Tool", "ToolMeta", "ToolOutput", "ValidationResult"]

InputT = TypeVar("InputT", bound=BaseModel)
OutputT = TypeVar("OutputT")

#: ``cancel``: an interrupt stops the call; ``block``: the call finishes first.
InterruptBehavior = Literal["cancel", "block"]

DEFAULT_MAX_RESULT_CHARS = 30_000


@dataclass(frozen=True)
class ValidationResult:
    """Outcome of semantic validation; ``message`` tells the model what to do instead."""

    ok: bool
    message: str = ""

    @classmethod
    def success(cls) -> ValidationResult:
        return cls(True)

    @classmethod
    def failure(cls, message: str) -> ValidationResult:
        return cls(False, message)


@dataclass
class ToolOutput(Generic[OutputT]):
    """What ``Tool.call`` returns.

    ``context_modifier`` carries ordered session changes (a new cwd, a
    discovered tool); the runtime applies it right after a serial call, or
    after a parallel batch in tool_use order.
    """

    data: OutputT
    is_error: bool = False
    context_modifier: Callable[[ToolContext], None] | None = None


class ToolMeta(abc.ABCMeta):
    """Checks the protocol's definition-time rules on every concrete Tool subclass."""

    def __init__(cls, name: str, bases: tuple[type, ...], namespace: dict[str, Any]) -> None:
        super().__init__(name, bases, namespace)
        if namespace.get("__module__") == __name__ or inspect.isabstract(cls):
            return
        tool_cls = cast(Any, cls)
        input_model = getattr(tool_cls, "input_model", None)
        if not (isinstance(input_model, type) and issubclass(input_model, BaseModel)):
            raise ToolDefinitionError(f"tool class {name} must set input_model to a pydantic model class")
        if (
            getattr(tool_cls, "touches_environment", True)
            and tool_cls.check_permissions is Tool.check_permissions
        ):
            raise ToolDefinitionError(
                f"tool class {name} touches the environment but defines no check_permissions; "
                "define it, or set touches_environment = False for a pure internal-state tool"
            )
        if tool_cls.interrupt_behavior not in ("cancel", "block"):
            raise ToolDefinitionError(f"tool class {name}: interrupt_behavior must be 'cancel' or 'block'")


class Tool(Generic[InputT, OutputT], metaclass=ToolMeta):
    """Base class of every tool. Subclasses set the class attributes and implement the abstract methods."""

    # --- model contract ----------------------------------------------------
    #: Name the model calls the tool by (instances may override, e.g. MCP proxies).
    name: str = ""
    #: Other names accepted on lookup (old names kept for transcripts).
    aliases: tuple[str, ...] = ()
    #: Pydantic model of the input; its JSON Schema is the tool's ``input_schema``.
    input_model: ClassVar[type[BaseModel]]
    #: Deferred tools are left out of ``tools[]`` until found through ToolSearch.
    defer_loading: bool = False
    #: Always in ``tools[]``, even when deferral would hide it.
    always_load: bool = False
    #: Extra words ToolSearch matches on.
    search_hint: str = ""

    # --- runtime contract ----------------------------------------------------
    #: False only for pure internal-state tools (TodoWrite, ToolSearch).
    touches_environment: ClassVar[bool] = True
    interrupt_behavior: ClassVar[InterruptBehavior] = "block"
    #: Output above this many characters is persisted; None opts out (tools that bound themselves, e.g. Read).
    max_result_chars: ClassVar[int | None] = DEFAULT_MAX_RESULT_CHARS
    #: Whether a result holds only what the sandbox's commands can read anyway (a command's output,
    #: files read through the sandbox's view): its persisted copy goes where commands see it too.
    #: False (the default: MCP tools, WebFetch, tools of an API caller) keeps it where only the
    #: file tools reach, so repo code a command runs never harvests what a host-side tool fetched.
    results_seen_by_commands: ClassVar[bool] = False
    #: Whether a failure of this tool in a parallel batch cancels its running siblings (Bash: yes).
    cancels_siblings_on_error: ClassVar[bool] = False
    #: Same input, same effect (MCP ``idempotentHint``).
    idempotent: ClassVar[bool] = False

    @abc.abstractmethod
    def prompt(self) -> str:
        """Model-facing description: what the tool does and how to use it well."""

    def input_schema(self) -> dict[str, Any]:
        """JSON Schema of the input, as sent to the model."""
        schema = self.input_model.model_json_schema()
        schema.pop("title", None)
        return _simplify_optionals(schema)

    def parse_input(self, raw: Any) -> InputT:
        """Schema validation; raises pydantic.ValidationError."""
        return cast(InputT, self.input_model.model_validate(raw))

    def is_deferred(self) -> bool:
        """Left out of ``tools[]`` until discovered through ToolSearch (``always_load`` wins)."""
        return self.defer_loading and not self.always_load

    def is_enabled(self) -> bool:
        """Whether the tool is offered at all in this environment."""
        return True

    async def validate(self, tool_input: InputT, ctx: ToolContext) -> ValidationResult:
        """Semantic checks beyond the schema (read-before-edit, unique match, size limits)."""
        return ValidationResult.success()

    def backfill(self, tool_input: InputT) -> InputT:
        """Return a copy with derived fields filled in for hooks/permissions/audit.

        The original input is never mutated; the default returns a deep copy (a shallow
        one when every value is immutable, which is the same thing for less).
        """
        return tool_input.model_copy(deep=not _immutable_values(tool_input))

    async def check_permissions(self, tool_input: InputT, ctx: ToolContext) -> PermissionResult:
        """The tool's own permission verdict; the engine combines it with rules and modes."""
        return PermissionResult.passthrough()

    def is_read_only(self, tool_input: InputT) -> bool:
        return False

    def is_concurrency_safe(self, tool_input: InputT) -> bool:
        return False

    def is_destructive(self, tool_input: InputT) -> bool:
        return False

    def is_open_world(self, tool_input: InputT) -> bool:
        return False

    @abc.abstractmethod
    async def call(self, tool_input: InputT, ctx: ToolContext) -> ToolOutput[OutputT]:
        """Do the work. Raise `ToolExecutionError` for failures the model can act on."""

    # --- model result ---------------------------------------------------------
    @abc.abstractmethod
    def to_model_content(self, output: OutputT) -> str | list[ContentBlock]:
        """Compact content for the model's tool_result (before large-result persistence)."""

    # --- user presentation ----------------------------------------------------
    def user_facing_name(self) -> str:
        return self.name

    def describe(self, tool_input: InputT) -> str:
        """One human line for a permission prompt."""
        return f"{self.user_facing_name()}({self.classifier_input(tool_input)})"

    def render_use(self, tool_input: InputT) -> str:
        """How the call is shown to a person: its `describe` line with each control, format or
        separator character as its escape (the model chose the input: OSC 52 or ``ESC[2K`` there
        acted on a terminal; red team round 39, review6)."""
        return escape_controls(self.describe(tool_input))

    def render_result(self, output: OutputT) -> str:
        """Rich rendering of the result for a person (may be longer than the model's view)."""
        return rendered_content(self.to_model_content(output))

    # --- governance -------------------------------------------------------------
    def permission_subject(self, tool_input: InputT) -> PermissionSubject:
        """What rules match against (subcommands, paths, domains)."""
        return PermissionSubject()

    def decision_key(self, tool_input: InputT, ctx: ToolContext) -> Hashable | None:
        """Everything a permission decision on this call depends on besides the engine's rules,
        mode and roots, as a hashable value; None (the default) when it depends on more (the
        disk, a repository, the network). Calls with equal keys get the allow the engine
        decided for the first one (`shellrt.permissions.engine.PermissionEngine.decide`), so a
        key must change whenever anything the tool's own check or its subject reads changes."""
        return None

    def classifier_input(self, tool_input: InputT) -> str:
        """A compact text of the input for classifiers, prompts and logs."""
        return json.dumps(
            tool_input.model_dump(mode="json", exclude_none=True), ensure_ascii=False, sort_keys=True
        )

    def audit_text(self, output: OutputT) -> str:
        """What the transcript records and search indexes."""
        return self.render_result(output)


def rendered_content(content: str | list[ContentBlock]) -> str:
    """The default person-facing text of model content (`Tool.render_result`): blocks as text,
    a non-text block as ``[type]``, each control, format or separator character as its escape (a
    command's or an MCP server's OSC 52 or ``ESC[2K`` reached the person raw; round 39, review9)."""
    text = (
        content if isinstance(content, str) else "\n".join(getattr(b, "text", f"[{b.type}]") for b in content)
    )
    return escape_controls(text)


def _simplify_optionals(schema: dict[str, Any]) -> dict[str, Any]:
    """Present ``X | None = None`` fields as plain optional ``X`` (not required), as models expect.

    Pydantic renders them as ``anyOf: [X, {type: null}]`` with ``default: null``;
    models handle a plain typed, non-required property better, and omitting the
    field means the same thing.
    """
    for container in (schema, *schema.get("$defs", {}).values()):
        for prop in container.get("properties", {}).values():
            options = prop.get("anyOf")
            if not isinstance(options, list) or prop.get("default", 0) is not None:
                continue
            non_null = [o for o in options if o != {"type": "null"}]
            if len(non_null) == 1 and len(options) == 2:
                del prop["anyOf"]
                prop.pop("default", None)
                prop.update({k: v for k, v in non_null[0].items() if k not in prop})
    return schema


_IMMUTABLE = (str, int, float, bool, bytes, type(None))


def _immutable_values(model: BaseModel) -> bool:
    """Whether every field and private value of ``model`` is an immutable scalar (no copy can differ)."""
    values = [*model.__dict__.values(), *(model.__pydantic_private__ or {}).values()]
    return all(type(v) in _IMMUTABLE for v in values) and not model.__pydantic_extra__
