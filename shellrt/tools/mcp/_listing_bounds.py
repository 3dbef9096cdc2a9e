"""How much of a server's tools/list a session takes (red team round 36).

A hostile server listed 50,000 tools (each a deferred tool every ToolSearch scores, crowding out
the operator's other servers) or a tool whose ``inputSchema`` held 10 MB of descriptions (once
found, in ``tools[]`` of every later request: a request the model API refuses). A server keeps its
first `MAX_TOOLS_PER_SERVER` tools (pages past them are not read) and a tool with a larger schema
than `MAX_SCHEMA_CHARS` is skipped; the session's diagnostics say which and what to do.

A server's own ``_meta["anthropic/alwaysLoad"]`` skips deferral: marked on every tool, 120 tools
of 20 KB put 2.4 MB in ``tools[]`` of every request, past any model's context (round 56). Its claim
is honoured for the first tools that fit in `SELF_LOADED_CHARS` (`SelfLoadBudget`); the rest stay
deferred. The operator's ``alwaysLoad`` in settings is their choice and is not bounded here.
"""

from __future__ import annotations

import json

import mcp.types as mt

from shellrt.tools.mcp._model_text import MAX_DESCRIPTION_CHARS

__all__ = [
    "MAX_SCHEMA_CHARS",
    "MAX_TOOLS_PER_SERVER",
    "SELF_LOADED_CHARS",
    "SELF_LOAD_KEY",
    "SelfLoadBudget",
    "listing_cut",
    "schema_too_large",
]

#: Tools taken from one server (real servers list tens; the largest known, a few hundred).
MAX_TOOLS_PER_SERVER = 1_000
#: Characters of one tool's input schema as JSON (real ones are a few KB).
MAX_SCHEMA_CHARS = 100_000
#: Characters (descriptions and schemas) one server may put in every request by its own
#: ``anthropic/alwaysLoad`` (about 16,000 tokens; real always-loaded tools are a few KB).
SELF_LOADED_CHARS = 64_000
#: The key of a tool's ``_meta`` by which a server asks for it to be always loaded.
SELF_LOAD_KEY = "anthropic/alwaysLoad"


def _schema_chars(spec: mt.Tool) -> int:
    return len(json.dumps(spec.input_schema or {}, ensure_ascii=False, default=str))


class SelfLoadBudget:
    """What one server's own ``anthropic/alwaysLoad`` claims may still put in every request."""

    def __init__(self, server: str) -> None:
        self._server = server
        self._left = SELF_LOADED_CHARS
        self._refused: list[str] = []

    def admit(self, spec: mt.Tool) -> bool:
        """Whether ``spec`` is always loaded by its server's claim (False: not claimed, or past the
        budget: then it stays deferred and `diagnostic` names it)."""
        if (spec.meta or {}).get(SELF_LOAD_KEY) is not True:
            return False
        cost = min(len(spec.description or ""), MAX_DESCRIPTION_CHARS) + _schema_chars(spec)
        if cost > self._left:
            self._refused.append(spec.name[:80])
            return False
        self._left -= cost
        return True

    def diagnostic(self) -> str | None:
        """What to say when claims were refused (None: every claim was honoured)."""
        if not self._refused:
            return None
        shown = ", ".join(repr(n) for n in self._refused[:5]) + (" ..." if len(self._refused) > 5 else "")
        return (
            f"MCP server '{self._server}' asks (anthropic/alwaysLoad) for more than {SELF_LOADED_CHARS:,} "
            f"characters of tools in every request; {len(self._refused):,} of them stay deferred ({shown}), "
            "found with ToolSearch (set \"alwaysLoad\": true on the server in settings to load them all)"
        )


def schema_too_large(server: str, spec: mt.Tool) -> str | None:
    """Why ``spec`` is skipped (its schema past `MAX_SCHEMA_CHARS`), else None."""
    size = _schema_chars(spec)
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
