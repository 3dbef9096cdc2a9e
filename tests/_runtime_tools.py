"""Small real tools on the protocol, for exercising the runtime's lifecycle and scheduling."""

from __future__ import annotations

import time
from typing import Any

import anyio
from pydantic import BaseModel, ConfigDict, Field

from shellrt.permissions import HookRunner, NoHooks, PostToolUseOutcome, PreToolUseOutcome
from shellrt.protocol import (
    PermissionResult,
    Tool,
    ToolContext,
    ToolExecutionError,
    ToolOutput,
    ValidationResult,
)


class SleepInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    seconds: float = Field(ge=0, le=10)
    fail: bool = False
    label: str = ""


class Span(BaseModel):
    label: str
    start: float
    end: float


class _SleepBase(Tool[SleepInput, Span]):
    input_model = SleepInput
    touches_environment = False
    interrupt_behavior = "cancel"

    def prompt(self) -> str:
        return "Sleep for a while."

    async def call(self, tool_input: SleepInput, ctx: ToolContext) -> ToolOutput[Span]:
        start = time.monotonic()
        await anyio.sleep(tool_input.seconds)
        span = Span(label=tool_input.label, start=start, end=time.monotonic())
        return ToolOutput(span, is_error=tool_input.fail)

    def to_model_content(self, output: Span) -> str:
        return f"slept {output.label}"


class SafeSleep(_SleepBase):
    """Read-only and concurrency-safe."""

    name = "SafeSleep"

    def is_read_only(self, tool_input: SleepInput) -> bool:
        return True

    def is_concurrency_safe(self, tool_input: SleepInput) -> bool:
        return True


class UnsafeSleep(_SleepBase):
    """Neither read-only nor concurrency-safe."""

    name = "UnsafeSleep"

    async def check_permissions(self, tool_input: SleepInput, ctx: ToolContext) -> PermissionResult:
        return PermissionResult.allow("test tool")


class ShellLike(SafeSleep):
    """Concurrency-safe, and its failure cancels batch siblings (like Bash)."""

    name = "ShellLike"
    cancels_siblings_on_error = True


class CdInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str
    delay: float = 0.0


class SafeCd(Tool[CdInput, str]):
    """Changes the session cwd through a context modifier."""

    name = "SafeCd"
    input_model = CdInput
    touches_environment = False

    def prompt(self) -> str:
        return "Change directory."

    def is_concurrency_safe(self, tool_input: CdInput) -> bool:
        return True

    def is_read_only(self, tool_input: CdInput) -> bool:
        return True

    async def call(self, tool_input: CdInput, ctx: ToolContext) -> ToolOutput[str]:
        seen = ctx.cwd
        await anyio.sleep(tool_input.delay)

        def modify(session: ToolContext) -> None:
            session.cwd = tool_input.path
            session.tool_state.setdefault("cd-order", []).append(tool_input.path)

        return ToolOutput(seen, context_modifier=modify)

    def to_model_content(self, output: str) -> str:
        return f"saw {output}"


class EchoInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = ""
    timeout: int = Field(default=1000, le=600_000)
    derived: str | None = None


class Echo(Tool[EchoInput, str]):
    """Echoes; validates, backfills, may raise."""

    name = "Echo"
    input_model = EchoInput
    max_result_chars = 20_000

    def prompt(self) -> str:
        return "Echo text back."

    async def validate(self, tool_input: EchoInput, ctx: ToolContext) -> ValidationResult:
        if tool_input.text == "invalid":
            return ValidationResult.failure("text must not be 'invalid'; choose other text")
        return ValidationResult.success()

    def backfill(self, tool_input: EchoInput) -> EchoInput:
        copy = tool_input.model_copy(deep=True)
        copy.derived = tool_input.text.upper()
        return copy

    async def check_permissions(self, tool_input: EchoInput, ctx: ToolContext) -> PermissionResult:
        if tool_input.text == "forbidden":
            return PermissionResult.deny("Echo refuses 'forbidden'")
        return PermissionResult.allow("echo is harmless")

    async def call(self, tool_input: EchoInput, ctx: ToolContext) -> ToolOutput[str]:
        if tool_input.text == "raise-expected":
            raise ToolExecutionError("expected failure: try another text")
        if tool_input.text == "raise-bug":
            raise RuntimeError("boom")
        if tool_input.text.startswith("big:"):
            return ToolOutput("".join(f"line {i}\n" for i in range(int(tool_input.text[4:]))))
        return ToolOutput(tool_input.text)

    def to_model_content(self, output: str) -> str:
        return output


class AskingTool(Tool[EchoInput, str]):
    """Always asks."""

    name = "Asker"
    input_model = EchoInput

    def prompt(self) -> str:
        return "Needs approval."

    async def check_permissions(self, tool_input: EchoInput, ctx: ToolContext) -> PermissionResult:
        return PermissionResult.ask("writes things")

    async def call(self, tool_input: EchoInput, ctx: ToolContext) -> ToolOutput[str]:
        return ToolOutput("done")

    def to_model_content(self, output: str) -> str:
        return output


class RecordingHooks(HookRunner):
    """Records what hooks observed; may block or rewrite."""

    def __init__(self, *, block: str | None = None, rewrite: dict[str, Any] | None = None) -> None:
        self.block = block
        self.rewrite = rewrite
        self.seen: list[dict[str, Any]] = []

    async def pre_tool_use(
        self, tool_name: str, tool_input: dict[str, Any], ctx: ToolContext
    ) -> PreToolUseOutcome:
        self.seen.append(tool_input)
        tool_input["text"] = "mutated-by-hook"  # must not leak into the original input
        return PreToolUseOutcome(blocked_reason=self.block, updated_input=self.rewrite)

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


ALL_TEST_TOOLS = (SafeSleep, UnsafeSleep, ShellLike, SafeCd, Echo, AskingTool)
NO_HOOKS = NoHooks()
