"""The real built-in tools for the permission tests, and small helpers (no tests here).

The permission tests run against the tools agents use — Bash, Read, Grep,
Edit, Write, WebFetch and MCP proxy tools — so a test can only pass when the
real tool's subject and own check give the decision (issue 17, item 10).
`Refuser` is not a stand-in: it is a tool whose own check always denies, for
testing that a tool's deny is final.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import mcp.types as mt
from pydantic import BaseModel, ConfigDict

from shellrt.protocol import PermissionResult, Tool, ToolContext, ToolOutput
from shellrt.tools.bash import Bash
from shellrt.tools.edit import EditTool
from shellrt.tools.grep import GrepTool
from shellrt.tools.mcp.proxy import McpProxyTool
from shellrt.tools.read import ReadTool
from shellrt.tools.web_fetch import WebFetchTool
from shellrt.tools.write import WriteTool

__all__ = [
    "Bash",
    "EditTool",
    "GrepTool",
    "ReadTool",
    "Refuser",
    "WebFetchTool",
    "WriteTool",
    "edit_input",
    "make_ctx",
    "mcp_tool",
]


def mcp_tool(name: str) -> McpProxyTool:
    """The real proxy tool for ``mcp__<server>__<tool>``; its connection only lists it (the pin
    check of an allow rule reads the server's current listing, round 21)."""
    _, server, tool = name.split("__", 2)
    spec = mt.Tool(name=tool, inputSchema={"type": "object"})
    return McpProxyTool(server, spec, cast(Any, _Listing(spec)), always_load=True)


class _Listing:
    """A connection that lists one tool and never calls it."""

    config = None  # how the server is reached: nothing here

    def __init__(self, spec: mt.Tool) -> None:
        self.spec = spec

    async def current_tool(self, name: str) -> mt.Tool | None:
        return self.spec if name == self.spec.name else None


def edit_input(path: str | Path) -> dict[str, Any]:
    """A valid Edit input for ``path``."""
    return {"file_path": str(path), "old_string": "a", "new_string": "b"}


class AnyIn(BaseModel):
    model_config = ConfigDict(extra="allow")


class Refuser(Tool[AnyIn, str]):
    """A tool whose own check always denies."""

    name = "Refuser"
    input_model = AnyIn

    async def check_permissions(self, tool_input: AnyIn, ctx: ToolContext) -> PermissionResult:
        return PermissionResult.deny("never")

    def prompt(self) -> str:
        return self.name

    async def call(self, tool_input: AnyIn, ctx: ToolContext) -> ToolOutput[str]:
        return ToolOutput("ok")

    def to_model_content(self, output: str) -> str:
        return output


def make_ctx(workspace: Path, tmp: Path, roots: tuple[Path, ...] | None = None) -> ToolContext:
    return ToolContext(
        session_id="sess-1",
        session_dir=tmp / "session",
        workspace=workspace,
        cwd=str(workspace),
        allowed_roots=roots if roots is not None else (workspace,),
    )
