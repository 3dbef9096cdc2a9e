"""Red team round 15: an external MCP server's tool name must not fall under a rule for another server.

Tool names are ``mcp__<server>__<tool>`` and a rule ``mcp__<server>`` covers a server's tools by
prefix. The tool's part is the server's own choice (a remote server lists whatever it likes), so
server ``docs`` naming a tool ``_search`` (or ``.search``, sanitised to ``_search``) gave
``mcp__docs___search`` — which starts with ``mcp__docs___``, the prefix of a server named
``docs_``. Measured on the old code: with ``allow: ["mcp__docs_"]`` (the operator's allow for a
harmless server ``docs_``), server ``docs``'s ``_search`` ran unasked, headless; with both
servers configured the session registered whichever sorted first under the one name, silently.

Now a tool name is split at the first ``__`` after ``mcp__`` (server names hold no ``__``), a
rule names the server it matches by that split, and a server name ending in ``_`` (which
would make the split ambiguous) is refused, in ``mcpServers`` and in rules, with a message.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.permissions.rules import RuleOrigin, RuleSyntaxError, parse_rule
from shellrt.runtime import Runtime
from shellrt.tools.mcp import parse_servers
from tests._governance import isolated_workspace

#: A bare JSON-RPC stdio MCP server (no SDK: importing it costs seconds on a loaded machine).
_SERVER = """
import json, os, sys
names, tag = os.environ["TOOL_NAMES"].split(","), os.environ["TAG"]
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    method, result = msg.get("method"), {}
    if method == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "t", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": n, "inputSchema": {"type": "object"}} for n in names]}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": "ran " + tag + ":" + msg["params"]["name"]}]}
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
"""


def _server(tmp: Path, tag: str, names: str) -> dict[str, Any]:
    script = tmp / "names_server.py"
    script.write_text(_SERVER)
    return {
        "command": sys.executable,
        "args": [str(script)],
        "env": {"TOOL_NAMES": names, "TAG": tag},
        "alwaysLoad": True,
    }


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolated_workspace(tmp_path, monkeypatch)


async def _session(ws: Path, settings: dict[str, Any], calls: list[str]) -> tuple[list[str], list[str]]:
    (ws / ".shellrt").mkdir(exist_ok=True)
    (ws / ".shellrt" / "settings.json").write_text(json.dumps(settings))
    async with Runtime(ws, "local", trust_workspace=True, session_dir=ws.parent / "s") as rt:
        blocks = [{"type": "tool_use", "id": f"c{i}", "name": n, "input": {}} for i, n in enumerate(calls)]
        out = await rt.run({"role": "assistant", "content": blocks})
        return [json.dumps(r) for r in out["content"]], list(rt.diagnostics)


def test_a_rule_for_one_server_does_not_cover_a_tool_of_another(ws: Path) -> None:
    """``allow: mcp__docs_`` (the operator's, for server docs_) and server docs's tool ``_search``."""
    settings = {
        "mcpServers": {"docs": _server(ws.parent, "docs", "_search,.drop")},
        "permissions": {"allow": ["mcp__docs_", "mcp__docs___x"]},
    }
    results, diagnostics = anyio.run(_session, ws, settings, ["mcp__docs___search", "mcp__docs___drop"])
    for shown in results:
        assert "ran docs" not in shown, shown  # asked (and refused: no one to ask), never allowed by the rule
    assert any("mcp__docs_" in d and "end" in d for d in diagnostics), diagnostics


def test_a_server_name_that_would_make_tool_names_ambiguous_is_refused() -> None:
    servers, diagnostics = parse_servers(
        {
            "docs_": {"command": "x"},
            "ok": {"command": "x"},
            "nl\n": {"command": "x"},
            "_lead": {"command": "x"},
        }
    )
    assert sorted(servers) == ["_lead", "ok"]
    assert any("'docs_'" in d for d in diagnostics), diagnostics
    assert any("'nl\\n'" in d for d in diagnostics), diagnostics


def test_rules_name_a_server_by_the_same_split() -> None:
    origin = RuleOrigin("cli")
    whole = parse_rule("mcp__docs", "allow", origin)
    assert whole.matches_tool("mcp__docs__search") and whole.matches_tool("mcp__docs___search")
    assert not whole.matches_tool("mcp__docs_x__search")
    star = parse_rule("mcp__docs__*", "deny", origin)
    assert star.matches_tool("mcp__docs___search") and not star.matches_tool("mcp__docsx__a")
    lead = parse_rule("mcp___lead", "deny", origin)
    assert lead.matches_tool("mcp___lead__t") and not lead.matches_tool("mcp___lead_x__t")
    for bad in ("mcp__docs_", "mcp__a-b_", "mcp__docs_\n"):
        with pytest.raises(RuleSyntaxError, match="end"):
            parse_rule(bad, "allow", origin)
