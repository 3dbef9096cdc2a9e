"""The ``mcpServers`` settings entry, in the shape MCP clients already share.

    {"mcpServers": {
        "files": {"command": "npx", "args": ["-y", "@scope/server"], "env": {"K": "v"}},
        "search": {"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer …"}},
        "local": {"command": "python", "args": ["srv.py"], "alwaysLoad": true, "timeout": 60}
    }}

A stdio server has a ``command``; a streamable-HTTP server has a ``url``. One
malformed entry must not take the other servers down, so `parse_servers`
returns diagnostics for the bad ones instead of raising.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

__all__ = [
    "DEFAULT_CALL_TIMEOUT_S",
    "DEFAULT_STARTUP_TIMEOUT_S",
    "HttpServerConfig",
    "McpServerConfig",
    "StdioServerConfig",
    "parse_servers",
]

#: Seconds one ``tools/call`` may take before it is abandoned and the connection is recycled.
DEFAULT_CALL_TIMEOUT_S = 600.0
#: Seconds to spawn/connect, initialize and list tools.
DEFAULT_STARTUP_TIMEOUT_S = 30.0

#: Server names become part of tool names (``mcp__<server>__<tool>``) and of permission rules.
_NAME = re.compile(r"[A-Za-z0-9_-]+")


class _Common(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    #: Offer the server's tools in ``tools[]`` from the start instead of deferring them to ToolSearch.
    always_load: bool = Field(default=False, alias="alwaysLoad")
    #: Seconds per tool call.
    timeout: float = Field(default=DEFAULT_CALL_TIMEOUT_S, gt=0)
    #: Seconds to start, initialize and list tools.
    startup_timeout: float = Field(default=DEFAULT_STARTUP_TIMEOUT_S, gt=0, alias="startupTimeout")
    #: Free text for people; ignored.
    description: str = ""
    #: Set false to keep an entry in the file without starting it.
    enabled: bool = True


class StdioServerConfig(_Common):
    """A server started as a subprocess speaking MCP over stdin/stdout."""

    type: Literal["stdio"] = "stdio"
    command: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list)
    #: Added to a minimal inherited environment (PATH, HOME, …), as the SDK does.
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None


class HttpServerConfig(_Common):
    """A server reached over streamable HTTP."""

    type: Literal["http", "streamable-http"] = "http"
    url: str = Field(pattern=r"^https?://")
    headers: dict[str, str] = Field(default_factory=dict)


McpServerConfig = StdioServerConfig | HttpServerConfig


def _parse_one(raw: Mapping[str, Any]) -> McpServerConfig:
    kind = raw.get("type")
    if kind == "sse":
        raise ValueError("the legacy SSE transport is not supported; use the server's streamable HTTP URL")
    if kind in ("http", "streamable-http") or ("url" in raw and "command" not in raw):
        return HttpServerConfig.model_validate(dict(raw))
    if kind not in (None, "stdio"):
        raise ValueError(f"unknown type {kind!r}; use 'stdio' (with command) or 'http' (with url)")
    return StdioServerConfig.model_validate(dict(raw))


def parse_servers(raw: Mapping[str, Any] | None) -> tuple[dict[str, McpServerConfig], list[str]]:
    """Validate every entry; return the good ones and one diagnostic per bad one."""
    servers: dict[str, McpServerConfig] = {}
    diagnostics: list[str] = []
    for name, entry in (raw or {}).items():
        if not _NAME.fullmatch(str(name)) or "__" in str(name) or str(name).endswith("_"):
            # A trailing '_' would make mcp__<server>__<tool> ambiguous: server docs's tool _search
            # and server docs_'s tool search are both mcp__docs___search (round 15).
            diagnostics.append(
                f"mcpServers: server name {name!r} must be letters, digits, '-' or single '_' not at "
                "its end (it becomes part of the tool names mcp__<server>__<tool>); skipped"
            )
            continue
        if not isinstance(entry, Mapping):
            diagnostics.append(f"mcpServers.{name}: expected an object with 'command' or 'url'; skipped")
            continue
        try:
            config = _parse_one(entry)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'entry'}: {e['msg']}"
                for e in exc.errors(include_url=False)
            )
            diagnostics.append(f"mcpServers.{name}: {problems}; skipped")
            continue
        except ValueError as exc:
            diagnostics.append(f"mcpServers.{name}: {exc}; skipped")
            continue
        if config.enabled:
            servers[str(name)] = config
    return servers, diagnostics
