"""A tools[] a prompt cache can keep: fixed order, discovery appends, alwaysLoad, defer_loading/strict."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import mcp.types as mt
import pytest

from shellrt.protocol import to_anthropic, to_openai
from shellrt.protocol.definitions import strict_compatible
from shellrt.runtime import Runtime
from shellrt.tools.mcp import McpProxyTool
from tests._mcp_support import fixture_server_config, write_settings

pytestmark = pytest.mark.anyio

BUILTIN_ORDER = [
    "Bash",
    "TaskOutput",
    "TaskStop",
    "Read",
    "Edit",
    "Write",
    "Glob",
    "Grep",
    "WebFetch",
    "TodoWrite",
]


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    # Settings list the servers out of name order; alwaysLoad servers go straight into tools[].
    write_settings(
        workspace,
        {
            "zsrv": fixture_server_config(alwaysLoad=True),
            "asrv": fixture_server_config(alwaysLoad=True),
            "msrv": fixture_server_config(),
        },
        permissions={"allow": ["mcp__msrv"]},
    )
    return workspace


async def _run(rt: Runtime, name: str, args: dict[str, Any], id_: str) -> dict[str, Any]:
    user = await rt.run(
        {"role": "assistant", "content": [{"type": "tool_use", "id": id_, "name": name, "input": args}]}
    )
    result: dict[str, Any] = user["content"][0]
    assert not result.get("is_error"), result
    return result


async def test_order_is_fixed_sorted_and_identical_across_runs(ws: Path) -> None:
    dumps: list[str] = []
    for run in range(2):
        async with Runtime(ws, "local", session_dir=ws.parent / f"s{run}", trust_workspace=True) as rt:
            names = [t["name"] for t in rt.tools_for_anthropic()]
            dumps.append(json.dumps(rt.tools_for_anthropic()))
    assert dumps[0] == dumps[1]
    assert names[: len(BUILTIN_ORDER)] == BUILTIN_ORDER
    mcp = [n for n in names if n.startswith("mcp__")]
    assert mcp == sorted(mcp) and mcp[0].startswith("mcp__asrv__") and mcp[-1].startswith("mcp__zsrv__")
    assert names.index("ToolSearch") < names.index(mcp[0])
    assert not any(n.startswith("mcp__msrv") for n in names), "deferred server stays out until discovered"


async def test_a_discovered_tool_goes_at_the_end(ws: Path) -> None:
    async with Runtime(ws, "local", session_dir=ws.parent / "s", trust_workspace=True) as rt:
        before = rt.tools_for_anthropic()
        await _run(rt, "ToolSearch", {"query": "select:mcp__msrv__pid"}, "t1")
        after = rt.tools_for_anthropic()
        assert after[: len(before)] == before, "no earlier entry moved: a cached prefix still matches"
        assert [t["name"] for t in after[len(before) :]] == ["mcp__msrv__pid"]
        await _run(rt, "ToolSearch", {"query": "select:mcp__msrv__echo"}, "t2")
        last = rt.tools_for_anthropic()
        assert last[: len(after)] == after and last[-1]["name"] == "mcp__msrv__echo"


async def test_defer_loading_for_the_api_tool_search_and_strict(ws: Path) -> None:
    async with Runtime(ws, "local", session_dir=ws.parent / "s", trust_workspace=True) as rt:
        plain = rt.tools_for_anthropic()
        assert all("defer_loading" not in t and "strict" not in t for t in plain)
        full = {t["name"]: t for t in rt.tools_for_anthropic(defer_loading=True)}
        assert full["mcp__msrv__echo"]["defer_loading"] is True
        assert "defer_loading" not in full["mcp__asrv__echo"] and "defer_loading" not in full["Bash"]
        strict = {t["name"]: t for t in rt.tools_for_anthropic(strict=True)}
        # Edit's schema is closed and unbounded: strict; Read has numeric bounds Anthropic refuses.
        assert strict["Edit"].get("strict") is True and "strict" not in strict["Read"]
        openai = {t["function"]["name"]: t["function"] for t in rt.tools_for_openai(strict=True)}
        # OpenAI strict needs every property required: Write qualifies, Read (optional offset) does not.
        assert openai["Write"].get("strict") is True and "strict" not in openai["Read"]
        assert all("strict" not in t["function"] for t in rt.tools_for_openai())


def test_meta_always_load_is_honoured() -> None:
    schema = {"type": "object", "properties": {}}
    pinned = mt.Tool.model_validate(
        {"name": "p", "inputSchema": schema, "_meta": {"anthropic/alwaysLoad": True}}
    )
    other = mt.Tool.model_validate(
        {"name": "o", "inputSchema": schema, "_meta": {"anthropic/alwaysLoad": "yes"}}
    )
    connection: Any = None  # never contacted: only the definition is inspected
    assert not McpProxyTool("srv", pinned, connection, always_load=False, server_may_load=True).is_deferred()
    assert McpProxyTool("srv", pinned, connection, always_load=False).is_deferred()  # no budget asked
    assert McpProxyTool("srv", other, connection, always_load=False).is_deferred()


def test_strict_compatibility_rules() -> None:
    closed = {
        "type": "object",
        "properties": {"minimum": {"type": "string"}},
        "required": ["minimum"],
        "additionalProperties": False,
    }
    assert strict_compatible(closed, all_required=True, unsupported=frozenset({"minimum"}))
    assert not strict_compatible({**closed, "additionalProperties": True}, all_required=False)
    assert not strict_compatible({**closed, "required": []}, all_required=True)
    nested = {**closed, "properties": {"minimum": {"type": "integer", "minimum": 0}}}
    assert not strict_compatible(nested, all_required=True, unsupported=frozenset({"minimum"}))
    assert strict_compatible(nested, all_required=True)


def test_definitions_without_options_are_unchanged(ws: Path) -> None:
    from shellrt.tools import builtin_tools

    bash = builtin_tools()[0]
    assert set(to_anthropic(bash)) == {"name", "description", "input_schema"}
    assert set(to_openai(bash)["function"]) == {"name", "description", "parameters"}
