"""Red team round 15: a hook matcher that names an MCP server the way rules do guards its tools.

``deny: ["mcp__docs"]`` covers every tool of server ``docs``, so an operator writes a guard hook
the same way: ``{"matcher": "mcp__docs", ...}``. But hook matchers compared whole names only,
and no tool is ever named ``mcp__docs`` (proxy names are ``mcp__<server>__<tool>``): the guard
matched nothing, silently, and every tool of the server ran unguarded (round 12 found the same
for a matcher naming a tool by an alias). Measured on the old code: a ``PreToolUse`` guard with
matcher ``mcp__docs`` that denies everything did not run for ``mcp__docs__search``.

Now a matcher name ``mcp__<server>`` (alone or among ``A|B`` names) means every tool of that
server, split as rules split tool names; ``mcp__docs__search`` still names that tool alone.
"""

from __future__ import annotations

from shellrt.permissions.hooks import matcher_matches


def test_a_server_matcher_guards_the_servers_tools() -> None:
    assert matcher_matches("mcp__docs", "mcp__docs__search")
    assert matcher_matches("mcp__docs", "mcp__docs___search")  # the tool's name is _search
    assert matcher_matches("Bash|mcp__docs", "mcp__docs__drop")
    assert matcher_matches("mcp__docs__*", "mcp__docs__drop")


def test_a_server_matcher_names_that_server_only() -> None:
    assert not matcher_matches("mcp__docs", "mcp__docsx__search")
    assert not matcher_matches("mcp__docs", "mcp__doc__s")
    assert not matcher_matches("mcp__docs__search", "mcp__docs__drop")
    assert not matcher_matches("mcp__docs", "Bash")
    assert matcher_matches("mcp__docs__search", "mcp__docs__search")
