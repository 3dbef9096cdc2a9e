"""Round 36, mcp: a server's input schema with a ``$ref`` loop ended the turn instead of a result.

``{"type": "object", "$ref": "#"}`` (or two ``$defs`` naming each other, or ``allOf: [{$ref: #}]``)
is a schema `jsonschema` accepts; checking any input against it recurses without end. The
`RecursionError` left `McpProxyTool.parse_input` (only `ValidationError` was expected), so the
model's call got no paired tool_result (``Runtime.run`` raised); a ``$ref`` to a URL or to a
``$defs`` entry that is not there did the same (`Unresolvable`: nothing is fetched). A schema the checker cannot finish is now treated like
a broken one: the server judges the input. A real `Runtime` session with a real stdio server.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.permissions.interfaces import ApprovalRequest, ApprovalResponse
from shellrt.runtime import Runtime
from tests._governance import isolated_workspace
from tests.test_redteam_round17_iface_mcp_text import _SERVER


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolated_workspace(tmp_path, monkeypatch)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "$ref": "#"},
        {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"},
        {"type": "object", "allOf": [{"$ref": "#"}]},
        {"type": "object", "$ref": "http://127.0.0.1:9/schema.json"},
        {"type": "object", "$ref": "#/$defs/nowhere"},
    ],
    ids=["self", "mutual", "allof", "remote", "missing"],
)
def test_a_ref_loop_gets_a_paired_result(ws: Path, schema: dict[str, Any]) -> None:
    (ws.parent / "server.py").write_text(_SERVER)
    (ws.parent / "tools.json").write_text(json.dumps([{"name": "loop", "inputSchema": schema}]))
    server = {"command": sys.executable, "args": [str(ws.parent / "server.py"), str(ws.parent / "tools.json")],
              "alwaysLoad": True}
    (ws / ".shellrt").mkdir(exist_ok=True)
    (ws / ".shellrt" / "settings.json").write_text(json.dumps({"mcpServers": {"srv": server}}))

    async def approver(request: ApprovalRequest) -> ApprovalResponse:
        return ApprovalResponse(behavior="deny")

    async def main() -> dict[str, Any]:
        async with Runtime(ws, "local", trust_workspace=True, approver=approver, session_dir=ws.parent / "s") as rt:
            block = {"type": "tool_use", "id": "t1", "name": "mcp__srv__loop", "input": {"x": 1}}
            result: dict[str, Any] = await rt.run({"role": "assistant", "content": [block]})
            return result

    result = anyio.run(main)
    (content,) = result["content"]
    assert content["tool_use_id"] == "t1" and content["is_error"], result
    assert "RecursionError" not in json.dumps(content), content  # reached the permission step: denied
