"""External MCP servers as Tools: ``mcpServers`` config, connections, ``mcp__<server>__<tool>`` proxies.

The official ``mcp`` SDK is imported only inside this package (and the MCP
server in ``shellrt.server.mcp*``).
"""

from __future__ import annotations

from shellrt.tools.mcp.config import (
    DEFAULT_CALL_TIMEOUT_S,
    DEFAULT_STARTUP_TIMEOUT_S,
    HttpServerConfig,
    McpServerConfig,
    StdioServerConfig,
    parse_servers,
)
from shellrt.tools.mcp.connection import McpServerConnection, McpServerError
from shellrt.tools.mcp.manager import McpConnections
from shellrt.tools.mcp.proxy import McpCallOutput, McpInput, McpProxyTool, proxy_tool_name, to_content_blocks

__all__ = [
    "DEFAULT_CALL_TIMEOUT_S",
    "DEFAULT_STARTUP_TIMEOUT_S",
    "HttpServerConfig",
    "McpCallOutput",
    "McpConnections",
    "McpInput",
    "McpProxyTool",
    "McpServerConfig",
    "McpServerConnection",
    "McpServerError",
    "StdioServerConfig",
    "parse_servers",
    "proxy_tool_name",
    "to_content_blocks",
]
