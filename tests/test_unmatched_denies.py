"""A deny rule that names no tool of the session is said at the start (it denies nothing).

``deny: ["Fetch"]`` (WebFetch misspelled) or ``mcp__docs`` for a server named ``Docs`` parsed and
matched nothing, silently (red team round 56, rules' Left). Real Runtime, real MCP server."""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt import Runtime
from shellrt.permissions.rules import parse_rule
from shellrt.permissions.unmatched_denies import denies_naming_no_tool

pytestmark = pytest.mark.anyio


def _notes(texts: list[str], names: list[str]) -> list[str]:
    return denies_naming_no_tool([parse_rule(t, "deny") for t in texts], names)


def test_only_rules_no_tool_can_meet_are_reported() -> None:
    names = ["Bash", "Read", "Edit", "Write", "WebFetch", "Grep", "mcp__Docs__search"]
    kept = ["Bash", "Bash(rm:*)", "Read(./.env)", "Edit(./x)", "Write", "WebFetch(domain:x.test)", "Grep(./s/**)",
            "mcp__Docs", "mcp__Docs__search", "NotebookEdit(./n.ipynb)"]
    assert _notes(kept, names) == [], _notes(kept, names)
    notes = _notes(["Fetch", "mcp__docs", "mcp__Docs__Search"], names)
    assert len(notes) == 3, notes
    assert "did you mean mcp__Docs?" in notes[1] and "did you mean mcp__Docs__search?" in notes[2], notes
    assert all("names no tool of this session" in n for n in notes)


async def test_a_session_says_which_deny_names_no_tool(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    async with Runtime(ws, "local", session_dir=tmp_path / "s", deny=["Fetch", "Bash(rm:*)", "Read(./.env)"]) as rt:
        said = [d for d in rt.diagnostics if "names no tool" in d]
    assert len(said) == 1 and "Fetch" in said[0], rt.diagnostics
