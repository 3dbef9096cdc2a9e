"""How much of a server's tools/list a session takes (red team round 36).

A hostile server listed 50,000 tools (each a deferred tool every ToolSearch scores, crowding out
the operator's other servers) or a tool whose ``inputSchema`` held 10 MB of descriptions (once
found, in ``tools[]`` of every later request: a request the model API refuses). A server keeps its
first `MAX_TOOLS_PER_SERVER` tools (pages past them are not read) and a tool with a larger schema
than `MAX_SCHEMA_CHARS` is skipped; the session's diagnostics say which and what to do.
"""

from __future__ import annotations

import json

import mcp.types as mt

__all__ = ["MAX_SCHEMA_CHARS", "MAX_TOOLS_PER_SERVER", "listing_cut", "schema_too_large"]

#: Tools taken from one server (real servers list tens; the largest known, a few hundred).
MAX_TOOLS_PER_SERVER = 1_000
#: Characters of one tool's input schema as JSON (real ones are a few KB).
MAX_SCHEMA_CHARS = 100_000


def schema_too_large(server: str, spec: mt.Tool) -> str | None:
    """Why ``spec`` is skipped (its schema past `MAX_SCHEMA_CHARS`), else None."""
    size = len(json.dumps(spec.input_schema or {}, ensure_ascii=False, default=str))
    if size <= MAX_SCHEMA_CHARS:
        return None
    return (
        f"MCP server '{server}': tool {spec.name[:80]!r} has an input schema of {size:,} characters, more "
        f"than shellrt sends the model ({MAX_SCHEMA_CHARS:,}); skipped (ask its author for a smaller schema)"
    )


def listing_cut(server: str, listed: int) -> str | None:
    """What to say when a server listed more than `MAX_TOOLS_PER_SERVER` tools (None: it did not)."""
    if listed <= MAX_TOOLS_PER_SERVER:
        return None
    return (
        f"MCP server '{server}' lists more than {MAX_TOOLS_PER_SERVER:,} tools; only its first "
        f"{MAX_TOOLS_PER_SERVER:,} are used (split it into smaller servers, or ask its author to)"
    )
