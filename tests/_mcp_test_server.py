"""A small stdio MCP server for the tests, written with the official SDK's low-level Server.

Tools: ``echo`` (annotated read-only), ``slow`` (sleeps, reporting progress),
``image`` (returns a 1x1 PNG), ``crash`` (kills its own process mid-call),
``structured`` (structured content only), ``fail`` (isError result).
Run: ``python tests/_mcp_test_server.py`` (speaks MCP on stdin/stdout).
"""

from __future__ import annotations

import base64
import os
import sys
from typing import Any

import anyio
import mcp.types as mt
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

PNG_1x1 = base64.b64encode(
    bytes.fromhex(
        # well-formed (checksums included: MCP images are walked as the API decodes them)
        "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
        "0000000d49444154789c63f8cfc0f01f00050001ff89993d1d"
        "0000000049454e44ae426082"
    )
).decode()

OBJ: dict[str, Any] = {"type": "object"}


def _tool(name: str, description: str, props: dict[str, Any], **annotations: Any) -> mt.Tool:
    return mt.Tool(
        name=name,
        description=description,
        input_schema={**OBJ, "properties": props, "required": list(props), "additionalProperties": False},
        annotations=mt.ToolAnnotations(**annotations) if annotations else None,
    )


TOOLS = [
    _tool(
        "echo",
        "Echo the text back.",
        {"text": {"type": "string"}},
        read_only_hint=True,
        open_world_hint=False,
    ),
    _tool("slow", "Sleep for `seconds`, reporting progress.", {"seconds": {"type": "number"}}),
    _tool("image", "Return a 1x1 PNG.", {}),
    _tool("crash", "Kill this server process in the middle of the call.", {}),
    _tool("structured", "Return structured content only.", {"n": {"type": "integer"}}),
    _tool("fail", "Return an error result.", {}),
    _tool("pid", "Return this server's process id.", {}, read_only_hint=True),
]


async def list_tools(ctx: Any, params: Any) -> mt.ListToolsResult:
    return mt.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: Any, params: mt.CallToolRequestParams) -> mt.CallToolResult:
    args = params.arguments or {}
    text = mt.TextContent
    if params.name == "echo":
        return mt.CallToolResult(content=[text(type="text", text=f"echo: {args['text']}")])
    if params.name == "slow":
        seconds = float(args["seconds"])
        steps = max(1, int(seconds * 10))
        for i in range(steps):
            await ctx.session.report_progress(i, steps, f"step {i}")
            await anyio.sleep(seconds / steps)
        return mt.CallToolResult(content=[text(type="text", text=f"slept {seconds}")])
    if params.name == "image":
        return mt.CallToolResult(
            content=[
                text(type="text", text="a pixel:"),
                mt.ImageContent(type="image", data=PNG_1x1, mime_type="image/png"),
            ]
        )
    if params.name == "crash":
        sys.stderr.write("test server: crashing on purpose\n")
        sys.stderr.flush()
        os._exit(3)
    if params.name == "structured":
        return mt.CallToolResult(content=[], structured_content={"n": args["n"], "square": args["n"] ** 2})
    if params.name == "fail":
        return mt.CallToolResult(content=[text(type="text", text="it failed on purpose")], is_error=True)
    if params.name == "pid":
        return mt.CallToolResult(content=[text(type="text", text=str(os.getpid()))])
    return mt.CallToolResult(content=[text(type="text", text=f"unknown tool {params.name}")], is_error=True)


async def main() -> None:
    server: Server[Any] = Server("shellrt-test", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
