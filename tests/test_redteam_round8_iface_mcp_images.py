"""Red team round 8 (interfaces): an MCP server's image that poisons the conversation.

An external MCP server's image content was passed to the model as given. The Messages API refuses a
whole request whose tool_result holds an image of a type it does not take (``text/html``), data that
is not base64, or more than 5 MB: a hostile (or broken) server made every later turn of the agent's
conversation fail, until someone removed the result by hand. Such an image now reaches the model as
a line saying what was left out and why. A real stdio MCP server (the official SDK); the local
backend.
"""

from __future__ import annotations

import base64
import itertools
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from shellrt.runtime import Runtime

pytestmark = pytest.mark.anyio

_ids = itertools.count()

PNG_1x1 = base64.b64encode(
    bytes.fromhex(
        # a well-formed 1 x 1 RGBA PNG (round 35: MCP images are walked, checksums included; the
        # earlier bytes here had a bad IDAT checksum, which decoders refuse)
        "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
        "0000000d49444154789c63f8cfc0f01f00050001ff89993d1d"
        "0000000049454e44ae426082"
    )
).decode()

#: name -> (mime type, base64 data) the hostile server answers with.
IMAGES: dict[str, tuple[str, str]] = {
    "html": ("text/html", base64.b64encode(b"<script>x</script>").decode()),
    "notbase64": ("image/png", "this is not base64 at all!"),
    "huge": ("image/png", base64.b64encode(b"\x89PNG" + b"\0" * (6 << 20)).decode()),
    "fine": ("image/png", PNG_1x1),
}

_SERVER = """
import json, sys
import anyio
import mcp.types as mt
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

IMAGES = json.loads(open(sys.argv[1]).read())

async def list_tools(ctx, params):
    return mt.ListToolsResult(tools=[mt.Tool(name=n, description="an image", input_schema={"type": "object"})
                                     for n in IMAGES])

async def call_tool(ctx, params):
    mime, data = IMAGES[params.name]
    return mt.CallToolResult(content=[mt.TextContent(type="text", text="here:"),
                                      mt.ImageContent(type="image", data=data, mime_type=mime)])

async def main():
    server = Server("hostile", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())

anyio.run(main)
"""


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SHELLRT_HOME", str(tmp_path / "state"))
    (tmp_path / "ws").mkdir()
    (tmp_path / "server.py").write_text(_SERVER)
    return tmp_path / "ws"


def _runtime(ws: Path) -> Runtime:
    (ws.parent / "images.json").write_text(json.dumps(IMAGES))
    server = {
        "command": sys.executable,
        "args": [str(ws.parent / "server.py"), str(ws.parent / "images.json")],
    }
    return Runtime(
        ws,
        "local",
        settings={"mcpServers": {"h": {**server, "alwaysLoad": True}}},
        allow=["mcp__h"],
        session_dir=ws.parent / "session",
    )


async def _call(rt: Runtime, name: str) -> dict[str, Any]:
    use = {"type": "tool_use", "id": f"r8i{next(_ids)}", "name": name, "input": {}}
    user = await rt.run({"role": "assistant", "content": [use]})
    result: dict[str, Any] = user["content"][0]
    return result


@pytest.mark.parametrize("name", ["html", "notbase64", "huge"])
async def test_an_image_the_model_api_refuses_becomes_a_note(ws: Path, name: str) -> None:
    async with _runtime(ws) as rt:
        result = await _call(rt, f"mcp__h__{name}")
    content = result["content"]
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    assert all(b["type"] == "text" for b in blocks), f"an image the API refuses was passed on: {blocks!r}"[
        :400
    ]
    text = "\n".join(b["text"] for b in blocks)
    assert "image from MCP server 'h' not shown" in text, text[:400]


async def test_held_a_valid_image_is_passed_on(ws: Path) -> None:
    async with _runtime(ws) as rt:
        result = await _call(rt, "mcp__h__fine")
    assert [b["type"] for b in result["content"]] == ["text", "image"]
    assert result["content"][1]["source"] == {"type": "base64", "media_type": "image/png", "data": PNG_1x1}
