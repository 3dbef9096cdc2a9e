"""ToolSearch never reveals or offers a tool the permission gate hides (issue 23)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from shellrt.runtime import Runtime
from tests._mcp_support import fixture_server_config, write_settings

pytestmark = pytest.mark.anyio


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))  # no user settings leak in
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return workspace


async def _search(rt: Runtime, query: str, id_: str = "s1") -> str:
    message = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": id_, "name": "ToolSearch", "input": {"query": query}}],
    }
    user = await rt.run(message)
    result: dict[str, Any] = user["content"][0]
    assert not result.get("is_error"), result
    content = result["content"]
    return content if isinstance(content, str) else "\n".join(b.get("text", "") for b in content)


async def test_a_denied_mcp_server_is_never_found(ws: Path) -> None:
    write_settings(
        ws,
        {"asrv": fixture_server_config(), "bsrv": fixture_server_config()},
        permissions={"deny": ["mcp__asrv"]},
    )
    async with Runtime(ws, "local", session_dir=ws.parent / "session", trust_workspace=True) as rt:
        assert rt.registry.get("mcp__asrv__echo") is not None, "the server's tools are registered"
        text = await _search(rt, "echo text back", "s1")
        assert "mcp__bsrv__echo" in text and "asrv" not in text
        text = await _search(rt, "select:mcp__asrv__echo,mcp__bsrv__pid", "s2")
        assert "mcp__asrv__echo" not in rt.context.discovered_tools
        assert "No tool named: mcp__asrv__echo." in text and "- mcp__bsrv__pid:" in text
        assert "loaded and can be called" in text  # only bsrv's tool is offered
        text = await _search(rt, "mcp__asrv__pid", "s3")
        assert "asrv" not in text.replace('"mcp__asrv__pid"', "")
        assert all(not t.name.startswith("mcp__asrv") for t in rt.visible_tools())


async def test_a_denied_builtin_is_not_already_available(ws: Path) -> None:
    async with Runtime(ws, "local", session_dir=ws.parent / "session", deny=["WebFetch"]) as rt:
        text = await _search(rt, "select:WebFetch,Read")
        assert "Already available" in text and "WebFetch" not in text.split("No tool named", 1)[0]
        assert "No tool named: WebFetch." in text
        assert "Read" in text.split("Already available", 1)[1]


async def test_an_unknown_tool_error_does_not_name_hidden_tools(ws: Path) -> None:
    async with Runtime(ws, "local", session_dir=ws.parent / "session", deny=["WebFetch"]) as rt:
        message = {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "u1", "name": "WebFetc", "input": {}}],
        }
        block = (await rt.run(message))["content"][0]
        content = block["content"]
        text = content if isinstance(content, str) else "\n".join(b.get("text", "") for b in content)
        assert block["is_error"] and "Unknown tool 'WebFetc'" in text and "Read" in text
        assert "WebFetch" not in text
