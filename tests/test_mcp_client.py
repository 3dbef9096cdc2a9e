"""External MCP servers in settings, called through the shellrt Runtime (Python API).

Uses the small stdio server in ``tests/_mcp_test_server.py`` (the official SDK).
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path
from typing import Any

import mcp.types as mt
import psutil
import pytest

from shellrt.runtime import Runtime
from shellrt.tools.mcp import McpConnections, McpProxyTool, parse_servers, proxy_tool_name, to_content_blocks
from tests._mcp_support import TEST_SERVER, fixture_server_config, processes_with, write_settings

pytestmark = pytest.mark.anyio


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))  # no user settings leak in
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return workspace


def _runtime(ws: Path, **kwargs: Any) -> Runtime:
    kwargs.setdefault("trust_workspace", True)  # the servers come from the workspace's settings
    return Runtime(ws, "local", session_dir=ws.parent / "session", **kwargs)


_IDS = itertools.count(1)


async def _call(rt: Runtime, name: str, args: dict[str, Any], id_: str | None = None) -> dict[str, Any]:
    # One id per call: a session refuses another call under a used id (round 19).
    id_ = id_ or f"t{next(_IDS)}"
    message = {"role": "assistant", "content": [{"type": "tool_use", "id": id_, "name": name, "input": args}]}
    user = await rt.run(message)
    result: dict[str, Any] = user["content"][0]
    return result


def _text(result: dict[str, Any]) -> str:
    content = result["content"]
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", f"[{b['type']}]") for b in content)


async def test_tools_are_deferred_until_discovered_and_rules_apply(ws: Path) -> None:
    write_settings(
        ws,
        {"t": fixture_server_config(), "loaded": fixture_server_config(alwaysLoad=True)},
        permissions={"allow": ["mcp__t", "mcp__loaded__echo"], "deny": ["mcp__t__fail"]},
    )
    async with _runtime(ws) as rt:
        visible = {t.name for t in rt.visible_tools()}
        assert "mcp__loaded__echo" in visible, "alwaysLoad servers are in tools[] from the start"
        assert "mcp__t__echo" not in visible, "other servers' tools are deferred"
        assert rt.registry.get("mcp__t__echo") is not None

        early = await _call(rt, "mcp__t__echo", {"text": "hi"})
        assert early["is_error"] and "ToolSearch" in _text(early)

        found = await _call(rt, "ToolSearch", {"query": "select:mcp__t__echo,mcp__t__fail,mcp__t__image"})
        assert not found.get("is_error"), _text(found)
        assert "mcp__t__echo" in {t.name for t in rt.visible_tools()}

        echo = await _call(rt, "mcp__t__echo", {"text": "hi"})
        assert not echo.get("is_error") and _text(echo) == "echo: hi"
        loaded = await _call(rt, "mcp__loaded__echo", {"text": "x"})
        assert not loaded.get("is_error"), _text(loaded)

        denied = await _call(rt, "mcp__t__fail", {})
        assert denied["is_error"] and "mcp__t__fail" in _text(denied)
        # No allow rule for this one and no approver: asked -> denied (fail closed), hints notwithstanding.
        unasked = await _call(rt, "mcp__loaded__pid", {})
        assert unasked["is_error"]


@pytest.mark.serial  # no _mcp_test_server.py may run anywhere afterwards
async def test_results_errors_and_a_server_dying_mid_call(ws: Path) -> None:
    write_settings(ws, {"t": fixture_server_config(alwaysLoad=True)})
    async with _runtime(ws, mode="bypassPermissions") as rt:
        image = await _call(rt, "mcp__t__image", {})
        assert [b["type"] for b in image["content"]] == ["text", "image"]
        assert image["content"][1]["source"]["media_type"] == "image/png"

        structured = await _call(rt, "mcp__t__structured", {"n": 4})
        assert json.loads(_text(structured)) == {"n": 4, "square": 16}

        failed = await _call(rt, "mcp__t__fail", {})
        assert failed["is_error"] and "on purpose" in _text(failed)

        invalid = await _call(rt, "mcp__t__echo", {"text": 3})
        assert invalid["is_error"] and "Invalid input" in _text(invalid) and "string" in _text(invalid)

        first_pid = int(_text(await _call(rt, "mcp__t__pid", {})))
        crashed = await _call(rt, "mcp__t__crash", {})
        assert crashed["is_error"]
        assert "closed the connection" in _text(crashed) and "crashing on purpose" in _text(crashed)
        assert not psutil.pid_exists(first_pid) or psutil.Process(first_pid).status() == psutil.STATUS_ZOMBIE

        again = await _call(rt, "mcp__t__pid", {})
        assert not again.get("is_error"), _text(again)
        second_pid = int(_text(again))
        assert second_pid != first_pid
    assert not psutil.pid_exists(second_pid) or psutil.Process(second_pid).status() == psutil.STATUS_ZOMBIE
    assert not processes_with(str(TEST_SERVER))


async def test_a_server_that_cannot_start_is_a_diagnostic_not_a_crash(ws: Path) -> None:
    write_settings(
        ws,
        {
            "broken": {"command": str(ws / "no-such-server")},
            "bad name!": {"command": "x"},
            "odd": {"url": "ftp://nowhere"},
            "t": fixture_server_config(alwaysLoad=True),
        },
    )
    async with _runtime(ws, mode="bypassPermissions") as rt:
        joined = "\n".join(rt.diagnostics)
        assert "broken" in joined and "could not be started" in joined
        assert "bad name!" in joined and "odd" in joined
        ok = await _call(rt, "mcp__t__echo", {"text": "fine"})
        assert _text(ok) == "echo: fine"


async def test_call_timeout_recycles_the_server(ws: Path) -> None:
    servers = {"t": fixture_server_config(alwaysLoad=True, timeout=0.5)}
    async with McpConnections(servers) as mcp:
        tools = {t.name: t for t in await mcp.tools()}
        slow = tools["mcp__t__slow"]
        assert isinstance(slow, McpProxyTool)
        async with _runtime(ws, tools=list(tools.values()), mode="bypassPermissions") as rt:
            result = await _call(rt, "mcp__t__slow", {"seconds": 2})
            assert result["is_error"] and "did not answer" in _text(result)
            echo = await _call(rt, "mcp__t__echo", {"text": "back"})
            assert _text(echo) == "echo: back"
        assert mcp.connections["t"].starts == 2


def test_hints_shape_scheduling_but_never_permissions() -> None:
    conn: Any = None
    ro = McpProxyTool(
        "s",
        mt.Tool(
            name="look", input_schema={"type": "object"}, annotations=mt.ToolAnnotations(read_only_hint=True)
        ),
        conn,
        always_load=False,
    )
    plain = McpProxyTool("s", mt.Tool(name="do.it", input_schema={"type": "object"}), conn, always_load=True)
    sample = ro.parse_input({})
    # Hints shape scheduling only: what shellrt claims never rests on them (round 56).
    assert ro.is_concurrency_safe(sample) and not ro.is_read_only(sample) and ro.is_destructive(sample)
    assert (
        not plain.is_concurrency_safe(sample) and plain.is_destructive(sample) and plain.is_open_world(sample)
    )
    assert ro.defer_loading and not plain.defer_loading and plain.always_load
    assert plain.name == "mcp__s__do_it" == proxy_tool_name("s", "do.it")


def test_config_parsing_and_content_mapping() -> None:
    servers, diagnostics = parse_servers(
        {
            "a": {"command": sys.executable, "args": ["x"], "alwaysLoad": True, "timeout": 5},
            "b": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"X": "1"}},
            "c": {"type": "sse", "url": "http://x"},
            "d": {"command": "x", "bogus": 1},
            "e": {"command": "x", "enabled": False},
        }
    )
    assert set(servers) == {"a", "b"} and servers["a"].always_load and servers["a"].timeout == 5
    assert len(diagnostics) == 2 and any("SSE" in d for d in diagnostics)
    blocks = to_content_blocks(
        mt.CallToolResult(
            content=[
                mt.TextContent(type="text", text='{"k": 1}'),
                mt.ResourceLink(type="resource_link", name="doc", uri="file:///doc.txt"),
            ],
            structured_content={"k": 1},
        )
    )
    assert [b.type for b in blocks] == ["text", "text"]  # structured content already present as text
    assert "file:///doc.txt" in blocks[1].text  # type: ignore[union-attr]
