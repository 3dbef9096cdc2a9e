"""ToolSearch: keyword and select search over deferred tools, discovery, rebuild from history."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel, ConfigDict

from shellrt.protocol import (
    PermissionResult,
    Tool,
    ToolCatalog,
    ToolContext,
    ToolExecutionError,
    ToolOutput,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)
from shellrt.tools.tool_search import (
    ToolSearchTool,
    discovery_order,
    rebuild_discovered_tools,
    rebuild_discovery_order,
    visible_tools,
)


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = ""


def make_tool(
    tool_name: str, description: str, *, hint: str = "", deferred: bool = True, always: bool = False
) -> Tool[Any, Any]:
    class _Fake(Tool[_In, str]):
        name = tool_name
        input_model = _In
        defer_loading = deferred
        always_load = always
        search_hint = hint

        def prompt(self) -> str:
            return description

        async def check_permissions(self, tool_input: _In, ctx: ToolContext) -> PermissionResult:
            return PermissionResult.ask("fake tools always ask")

        async def call(self, tool_input: _In, ctx: ToolContext) -> ToolOutput[str]:
            return ToolOutput("ok")

        def to_model_content(self, output: str) -> str:
            return output

    return _Fake()


class FakeCatalog(ToolCatalog):
    def __init__(self, tools: list[Tool[Any, Any]]) -> None:
        self.tools = tools

    def all_tools(self) -> list[Tool[Any, Any]]:
        return list(self.tools)

    def get(self, name: str) -> Tool[Any, Any] | None:
        return next((t for t in self.tools if t.name == name), None)


TOOLS = [
    make_tool("Read", "Read a file.", deferred=False),
    make_tool("mcp__slack__send_message", "Send a message to a Slack channel.", hint="chat post"),
    make_tool("mcp__slack__list_channels", "List Slack channels.", hint="chat"),
    make_tool("mcp__github__create_pull_request", "Open a pull request on GitHub.", hint="pr review"),
    make_tool("NotebookEdit", "Edit a Jupyter notebook cell.\nMore details.", hint="ipynb"),
    make_tool("AlwaysThere", "Deferred but always loaded.", always=True),
]


def make_ctx(tmp_path: Path) -> ToolContext:
    catalog = FakeCatalog(TOOLS)
    return ToolContext(
        session_id="s",
        session_dir=tmp_path,
        workspace=tmp_path,
        cwd=str(tmp_path),
        services={ToolCatalog: catalog},
    )


def search(ctx: ToolContext, query: str, **kw: Any) -> tuple[Any, str]:
    tool = ToolSearchTool()

    async def go() -> tuple[Any, str]:
        out = await tool.call(tool.parse_input({"query": query, **kw}), ctx)
        if out.context_modifier:
            out.context_modifier(ctx)
        text = tool.to_model_content(out.data)
        assert isinstance(text, str)
        return out.data, text

    return anyio.run(go)


def test_keyword_search_ranks_and_discovers(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    data, text = search(ctx, "slack send")
    assert [m.name for m in data.matches][0] == "mcp__slack__send_message"
    assert "- mcp__slack__send_message: Send a message to a Slack channel." in text
    assert "mcp__slack__send_message" in ctx.discovered_tools
    assert "Read" not in {m.name for m in data.matches}  # only deferred tools are searched


def test_required_terms_hint_and_limit(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    data, _ = search(ctx, "+github pr")
    assert [m.name for m in data.matches] == ["mcp__github__create_pull_request"]
    data, _ = search(ctx, "ipynb")
    assert [m.name for m in data.matches] == ["NotebookEdit"] and data.matches[
        0
    ].description == "Edit a Jupyter notebook cell."
    data, _ = search(ctx, "slack", max_results=1)
    assert len(data.matches) == 1


def test_select_exact_names(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    data, text = search(ctx, "select:NotebookEdit, mcp__slack__list_channels,Read,Nope")
    assert [m.name for m in data.matches] == ["NotebookEdit", "mcp__slack__list_channels"]
    assert "Already available (call directly): Read." in text and "No tool named: Nope." in text
    assert ctx.discovered_tools == {"NotebookEdit", "mcp__slack__list_channels"}


def test_no_match_leaves_discovery_alone(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    data, text = search(ctx, "kubernetes")
    assert not data.matches and "No deferred tool matches" in text and not ctx.discovered_tools


def test_without_catalog(tmp_path: Path) -> None:
    ctx = ToolContext(session_id="s", session_dir=tmp_path, workspace=tmp_path, cwd=str(tmp_path))
    with pytest.raises(ToolExecutionError, match="No tool catalog"):
        search(ctx, "x")


def test_deferred_tool_absent_until_discovered_and_appended_at_the_end(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    names = [t.name for t in visible_tools(TOOLS, discovery_order(ctx))]
    assert names == ["Read", "AlwaysThere"]
    search(ctx, "select:NotebookEdit,mcp__slack__send_message")
    names = [t.name for t in visible_tools(TOOLS, discovery_order(ctx))]
    # discovered tools go last, in discovery order: the prefix (and a prompt cache of it) never shifts
    assert names == ["Read", "AlwaysThere", "NotebookEdit", "mcp__slack__send_message"]
    search(ctx, "select:mcp__github__create_pull_request")
    later = [t.name for t in visible_tools(TOOLS, discovery_order(ctx))]
    assert later[: len(names)] == names and later[-1] == "mcp__github__create_pull_request"
    # the runtime's registry agrees
    from shellrt.runtime.registry import ToolRegistry

    registry = ToolRegistry(TOOLS)
    assert [t.name for t in registry.visible(discovery_order(ctx))] == later


def test_round_trip_rebuild_from_history(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    tool = ToolSearchTool()
    _, text1 = search(ctx, "select:NotebookEdit")
    _, text2 = search(ctx, "github")
    history: list[Any] = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "searching"},
                {
                    "type": "tool_use",
                    "id": "t1",
                    "name": "ToolSearch",
                    "input": {"query": "select:NotebookEdit"},
                },
            ],
        },
        UserMessage(content=[ToolResultBlock(tool_use_id="t1", content=text1)]),
        {
            "role": "assistant",
            "content": [
                ToolUseBlock(id="t2", name="ToolSearch", input={"query": "github"}),
                {"type": "tool_use", "id": "t3", "name": "ToolSearch", "input": {"query": "x"}},
                {"type": "tool_use", "id": "t4", "name": "Other", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t2", "content": [{"type": "text", "text": text2}]},
                {"type": "tool_result", "tool_use_id": "t3", "content": "- Fake: boom", "is_error": True},
                {"type": "tool_result", "tool_use_id": "t4", "content": "- Bogus: not a search"},
            ],
        },
    ]
    assert (
        rebuild_discovered_tools(history)
        == ctx.discovered_tools
        == {"NotebookEdit", "mcp__github__create_pull_request"}
    )
    assert rebuild_discovery_order(history) == discovery_order(ctx)
    assert not tool.touches_environment and tool.is_read_only(tool.parse_input({"query": "x"}))
