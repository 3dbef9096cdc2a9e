"""Red team round 10 (part 2): restarting the operator's MCP server must not run what a command wrote.

A stdio MCP server from the operator's settings runs on the host. When its command line names a
workspace file (``python3 tools/srv.py``), a command in the sandbox could rewrite that file, then
have the server crash (or time out) through one of its own tools: the next call restarted the
server, so the planted code ran unsandboxed. The files a server's command line runs are now hashed
when it first starts, and a server whose files changed is not restarted.
"""

from __future__ import annotations

import base64
import json
import secrets
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

import shellrt
from tests._bwrap_session import require_bwrap
from tests._governance import trust_env
from tests._mcp_support import TEST_SERVER

pytestmark = pytest.mark.anyio


async def _call(rt: shellrt.Runtime, name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    block = {"type": "tool_use", "id": "mr-" + secrets.token_hex(6), "name": name, "input": tool_input}
    result: dict[str, Any] = (await rt.run([block]))["content"][0]
    return result


async def test_a_server_script_a_command_rewrote_is_not_restarted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed on the old code: the restart ran the planted server script on the host (the marker,
    outside every writable root of the sandbox, was written)."""
    require_bwrap()
    trust_env(tmp_path, monkeypatch)
    repo = tmp_path / "repo"
    (repo / "tools").mkdir(parents=True)
    server = repo / "tools" / "srv.py"
    shutil.copy(TEST_SERVER, server)
    marker = tmp_path / "outside" / "pwned"
    marker.parent.mkdir()
    servers = {"w": {"command": sys.executable, "args": [str(server)], "alwaysLoad": True}}
    settings = tmp_path / "operator-settings.json"
    settings.write_text(json.dumps({"mcpServers": servers, "permissions": {"allow": ["Bash", "mcp__w"]}}))
    future = "from __future__ import annotations\n"
    planted = server.read_text().replace(future, future + f"open({str(marker)!r}, 'w').write('host')\n", 1)
    # python3: a write the analysis cannot see (a shell redirect there asks since round 17).
    encoded = base64.b64encode(planted.encode()).decode()
    plant = f"python3 -c \"import base64; open('tools/srv.py', 'wb').write(base64.b64decode('{encoded}'))\""
    session = tmp_path / "session"
    async with shellrt.Runtime(repo, "bwrap", session_dir=session, settings_files=[settings]) as rt:
        assert not (await _call(rt, "mcp__w__echo", {"text": "hi"})).get("is_error")
        wrote = await _call(rt, "Bash", {"command": plant})
        # Round 17: what a server runs from a writable root is a protected file: the rewrite is
        # reverted after the command (it was kept, and only the restart refused; the next
        # session's first start ran it), so the restart runs the operator's script again.
        assert not wrote.get("is_error") and "tools/srv.py" in json.dumps(wrote), wrote
        assert server.read_text() != planted
        assert (await _call(rt, "mcp__w__crash", {}))["is_error"]
        again = await _call(rt, "mcp__w__echo", {"text": "hi"})
    assert not marker.exists(), "a restarted MCP server ran a script a sandboxed command wrote, on the host"
    assert not again.get("is_error"), again
