"""Small Tool subclasses mimicking the permission subjects of the real tools (no tests here).

They let the permission tests run without depending on the Bash/file/web
tools being finished: each returns the same `PermissionSubject` shape and a
comparable own check (Bash: read-only inside the workspace allows, else asks;
file tools: outside allowed roots asks, sensitive paths ask as a safety check).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from shellrt.protocol import PermissionResult, PermissionSubject, Tool, ToolContext, ToolOutput

try:
    from shellrt.analysis import analyze
except ImportError:  # pragma: no cover - analysis not merged yet
    analyze = None  # type: ignore[assignment]

SENSITIVE = (".env", ".git/hooks", ".bashrc", ".zshrc", ".profile")


class CommandIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    command: str


class PathIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    file_path: str


class UrlIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    url: str


class AnyIn(BaseModel):
    model_config = ConfigDict(extra="allow")


class _Base(Tool[Any, str]):
    input_model = AnyIn

    async def check_permissions(self, tool_input: Any, ctx: ToolContext) -> PermissionResult:
        return PermissionResult.passthrough()

    def prompt(self) -> str:
        return self.name

    async def call(self, tool_input: Any, ctx: ToolContext) -> ToolOutput[str]:
        return ToolOutput("ok")

    def to_model_content(self, output: str) -> str:
        return output


def split(command: str) -> tuple[list[str], bool]:
    """Subcommands and read-only verdict (the analysis when available)."""
    if analyze is not None:
        a = analyze(command)
        return [s.text for s in a.subcommands], bool(a.read_only)
    parts = [p.strip() for p in command.replace("&&", ";").replace("||", ";").replace("|", ";").split(";")]
    subs = [p for p in parts if p]
    return subs, all(s.split()[0] in ("ls", "cat", "git", "echo") for s in subs)


class FakeBash(_Base):
    name = "Bash"
    input_model = CommandIn

    def permission_subject(self, tool_input: CommandIn) -> PermissionSubject:
        subs, _ = split(tool_input.command)
        incomplete = analyze is not None and not analyze(tool_input.command).parse_ok
        return PermissionSubject(commands=tuple(subs), access="execute", incomplete=incomplete)

    def is_read_only(self, tool_input: CommandIn) -> bool:
        return split(tool_input.command)[1]

    async def check_permissions(self, tool_input: CommandIn, ctx: ToolContext) -> PermissionResult:
        if self.is_read_only(tool_input):
            return PermissionResult.allow("read-only command inside the workspace")
        return PermissionResult.ask("this command may change things")


def _inside(path: str, roots: tuple[Path, ...]) -> bool:
    real = os.path.realpath(path)
    return any(real == os.path.realpath(r) or real.startswith(os.path.realpath(r) + "/") for r in roots)


class _FileTool(_Base):
    input_model = PathIn
    access = "read"

    def _abs(self, tool_input: PathIn) -> str:
        return os.path.realpath(tool_input.file_path)

    def permission_subject(self, tool_input: PathIn) -> PermissionSubject:
        return PermissionSubject(paths=(self._abs(tool_input),), access=self.access)  # type: ignore[arg-type]

    async def check_permissions(self, tool_input: PathIn, ctx: ToolContext) -> PermissionResult:
        path = self._abs(tool_input)
        if any(s in path for s in SENSITIVE) and self.access == "write":
            return PermissionResult.ask(f"{path} is sensitive", safety_check=True)
        if not _inside(path, ctx.allowed_roots or (ctx.workspace,)):
            return PermissionResult.ask(f"{path} is outside the allowed directories")
        return (
            PermissionResult.allow("inside the workspace")
            if self.access == "read"
            else PermissionResult.passthrough()
        )


class FakeRead(_FileTool):
    name = "Read"
    access = "read"

    def is_read_only(self, tool_input: PathIn) -> bool:
        return True


class FakeGrep(FakeRead):
    name = "Grep"


class FakeEdit(_FileTool):
    name = "Edit"
    access = "write"


class FakeWrite(_FileTool):
    name = "Write"
    access = "write"


class FakeWebFetch(_Base):
    name = "WebFetch"
    input_model = UrlIn

    def permission_subject(self, tool_input: UrlIn) -> PermissionSubject:
        from urllib.parse import urlparse

        return PermissionSubject(domains=(urlparse(tool_input.url).hostname or "",), access="fetch")

    async def check_permissions(self, tool_input: UrlIn, ctx: ToolContext) -> PermissionResult:
        return PermissionResult.passthrough()

    def is_read_only(self, tool_input: UrlIn) -> bool:
        return True


class FakeMcp(_Base):
    input_model = AnyIn

    def __init__(self, name: str) -> None:
        self.name = name

    async def check_permissions(self, tool_input: AnyIn, ctx: ToolContext) -> PermissionResult:
        return PermissionResult.passthrough()


class Refuser(_Base):
    name = "Refuser"
    input_model = AnyIn

    async def check_permissions(self, tool_input: AnyIn, ctx: ToolContext) -> PermissionResult:
        return PermissionResult.deny("never")


def make_ctx(workspace: Path, tmp: Path, roots: tuple[Path, ...] | None = None) -> ToolContext:
    return ToolContext(
        session_id="sess-1",
        session_dir=tmp / "session",
        workspace=workspace,
        cwd=str(workspace),
        allowed_roots=roots if roots is not None else (workspace,),
    )
