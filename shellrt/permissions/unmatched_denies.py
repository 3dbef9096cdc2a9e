"""Deny rules that name no tool of the session: said at the start, not left to deny nothing.

Why (red team round 56, rules' Left): a tool-wide deny spelled for a tool that does not exist
(``"Fetch"`` for WebFetch) or an MCP server in another case than configured (``mcp__docs`` for
``Docs``) parses, and matches nothing, silently: the operator believes a tool is off that is not.
Tool names are only known once the session has registered its tools (built-in, the Python API's,
MCP servers'), so this is asked then. Rules the sandbox compiles whatever tools exist (``Read``,
``Edit``/``Write`` paths, ``WebFetch`` domains) are never reported.
"""

from __future__ import annotations

from collections.abc import Iterable

from shellrt.permissions.rules import READ_RULE_TOOLS, WRITE_RULE_TOOLS, PermissionRule, mcp_name_parts

__all__ = ["denies_naming_no_tool"]


def denies_naming_no_tool(rules: Iterable[PermissionRule], tool_names: Iterable[str]) -> list[str]:
    """Diagnostics for each deny rule of ``rules`` that no tool of ``tool_names`` can meet."""
    names = set(tool_names)
    notes = []
    for rule in rules:
        if rule.kind != "deny" or rule.spec_kind == "domain":
            continue
        if rule.tool in READ_RULE_TOOLS or rule.tool in WRITE_RULE_TOOLS or rule.tool in names:
            continue
        if rule.tool_wide and any(rule.matches_tool(name) for name in names):
            continue  # an MCP server rule covering that server's tools
        near = sorted(n for n in _spellable(names) if n.casefold() == rule.tool.casefold())
        hint = f" (did you mean {near[0]}?)" if near else " (check its spelling: tool names are case-sensitive)"
        notes.append(f"{rule.describe()} names no tool of this session, so it denies nothing{hint}")
    return notes


def _spellable(names: set[str]) -> set[str]:
    """What a rule may name: each tool, and each MCP server (``mcp__<server>``) of the tools."""
    return names | {"mcp__" + mcp_name_parts(n)[0] for n in names if n.startswith("mcp__")}
