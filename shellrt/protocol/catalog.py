"""A read-only view of the session's tools, for tools that reason about other tools (ToolSearch).

The runtime's registry implements it and registers itself as a ToolContext
service, so the tools layer never imports the runtime layer.
"""

from __future__ import annotations

import abc
from typing import Any

from shellrt.protocol.tool import Tool

__all__ = ["ToolCatalog"]


class ToolCatalog(abc.ABC):
    """The tools of a session, in stable order."""

    @abc.abstractmethod
    def all_tools(self) -> list[Tool[Any, Any]]:
        """Every enabled tool, deferred or not, in registration order."""

    @abc.abstractmethod
    def get(self, name: str) -> Tool[Any, Any] | None:
        """The tool called ``name`` (or one of its aliases), if any."""

    def deferred_tools(self) -> list[Tool[Any, Any]]:
        """Tools left out of ``tools[]`` until discovered (``always_load`` wins over deferral)."""
        return [t for t in self.all_tools() if t.is_deferred()]
