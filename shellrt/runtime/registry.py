"""The session's tools, in a stable order, with deferral and discovery.

`tools[]` order never changes across calls (model prompt caches depend on
it): loaded tools in registration order (the runtime registers built-ins in
a fixed order, then MCP tools sorted by server and name), then discovered
deferred tools in discovery order — a newly found tool goes at the end, so
every earlier entry keeps its place.
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
        discovered: Iterable[str] = (),
        is_visible: Callable[[Tool[Any, Any]], bool] = lambda _t: True,
    ) -> list[Tool[Any, Any]]:
        """Tools for ``tools[]``: loaded ones, then discovered deferred ones in ``discovered`` order.

        Pass ``discovered`` in discovery order; a set (no order) falls back to
        registration order. Tools ``is_visible`` rejects (denied outright) are left out.
        """
        tools = [t for t in self.all_tools() if is_visible(t)]
        deferred = {t.name: t for t in tools if t.is_deferred()}
        if isinstance(discovered, (set, frozenset)):
            order = [name for name in deferred if name in discovered]
        else:
            order = list(dict.fromkeys(discovered))
        return [t for t in tools if not t.is_deferred()] + [deferred[n] for n in order if n in deferred]

    def for_anthropic(
        self, tools: list[Tool[Any, Any]], *, defer_loading: bool = False, strict: bool = False
    ) -> list[dict[str, Any]]:
        return [to_anthropic(t, defer_loading=defer_loading, strict=strict) for t in tools]

    def for_openai(self, tools: list[Tool[Any, Any]], *, strict: bool = False) -> list[dict[str, Any]]:
        return [to_openai(t, strict=strict) for t in tools]
