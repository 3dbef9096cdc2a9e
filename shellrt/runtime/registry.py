"""The session's tools, in a stable order, with deferral and discovery.

`tools[]` order never changes across calls (model prompt caches depend on
it): it is registration order, filtered by visibility, deferral and discovery.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from shellrt.protocol import Tool, ToolCatalog, to_anthropic, to_openai

__all__ = ["DuplicateToolError", "ToolRegistry"]


class DuplicateToolError(ValueError):
    """Raised when two tools claim the same name or alias."""


class ToolRegistry(ToolCatalog):
    """Ordered tool lookup by name or alias."""

    def __init__(self, tools: Iterable[Tool[Any, Any]] = ()) -> None:
        self._tools: list[Tool[Any, Any]] = []
        self._by_name: dict[str, Tool[Any, Any]] = {}
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool[Any, Any]) -> None:
        """Add a tool at the end; names and aliases must be unique."""
        if not tool.name:
            raise ValueError(f"{type(tool).__name__} has no name")
        for key in (tool.name, *tool.aliases):
            if key in self._by_name:
                raise DuplicateToolError(f"tool name {key!r} is already registered")
        self._tools.append(tool)
        for key in (tool.name, *tool.aliases):
            self._by_name[key] = tool

    def unregister(self, name: str) -> None:
        """Remove a tool (e.g. an MCP server's tools on reconnect)."""
        tool = self._by_name.get(name)
        if tool is None:
            return
        self._tools.remove(tool)
        for key in (tool.name, *tool.aliases):
            self._by_name.pop(key, None)

    # --- ToolCatalog ----------------------------------------------------------
    def all_tools(self) -> list[Tool[Any, Any]]:
        return [t for t in self._tools if t.is_enabled()]

    def get(self, name: str) -> Tool[Any, Any] | None:
        tool = self._by_name.get(name)
        return tool if tool is not None and tool.is_enabled() else None

    def names(self) -> list[str]:
        return [t.name for t in self.all_tools()]

    # --- what the model sees ------------------------------------------------------
    def visible(
        self,
        discovered: set[str] | frozenset[str] = frozenset(),
        is_visible: Callable[[Tool[Any, Any]], bool] = lambda _t: True,
    ) -> list[Tool[Any, Any]]:
        """Tools for ``tools[]``: enabled, not denied outright, and loaded or discovered."""
        return [t for t in self.all_tools() if is_visible(t) and (not t.is_deferred() or t.name in discovered)]

    def for_anthropic(self, tools: list[Tool[Any, Any]]) -> list[dict[str, Any]]:
        return [to_anthropic(t) for t in tools]

    def for_openai(self, tools: list[Tool[Any, Any]]) -> list[dict[str, Any]]:
        return [to_openai(t) for t in tools]
