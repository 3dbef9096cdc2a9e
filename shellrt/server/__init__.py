"""Servers that expose a session's tools to agents: the JSONL tool protocol and MCP.

Submodules are imported on demand (``shellrt.server.jsonl``, ``shellrt.server.mcp``)
so that the MCP SDK is loaded only by the MCP server.
"""

from __future__ import annotations

__all__: list[str] = []
