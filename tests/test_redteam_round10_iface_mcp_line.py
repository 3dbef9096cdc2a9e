"""Round 8's open gap: shellrt read a stdio MCP server's JSON-RPC lines without a length bound.

The SDK's stdio transport gathered a server's stdout into lines with no bound and re-split all
pending text on each 64 KiB read: a hostile server answering a call with one endless line grew
shellrt's memory without end and spent CPU quadratic in the line (a 96 MiB line: minutes of one
core, several hundred MB). Now a line past `MAX_LINE_BYTES` ends the connection: the call
fails at once saying why, the server is stopped, the next call starts a fresh one. A real server
process (plain JSON-RPC on stdio, no SDK) answers the handshake and floods on ``tools/call``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

import shellrt
from shellrt.protocol import ToolUseBlock
from shellrt.tools.mcp._stdio import MAX_LINE_BYTES
from tests._mcp_support import write_settings

pytestmark = pytest.mark.anyio

#: Answers initialize and tools/list; ``flood`` answers with one line of FLOOD_MIB MiB (never
#: ended when FLOOD_OPEN is set), ``ok`` with a short result. ``FLOOD_AT=start`` floods the handshake.
_SERVER = r"""
import json, os, sys, time
FLOOD = int(os.environ["FLOOD_MIB"]) << 20
def send(obj):
    sys.stdout.buffer.write(json.dumps(obj).encode() + b"\n"); sys.stdout.flush()
def flood(msg_id):
    sys.stdout.buffer.write(b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"' % msg_id)
    chunk = b"x" * (1 << 20)
    for _ in range(FLOOD >> 20):
        try:
            sys.stdout.buffer.write(chunk)
        except BrokenPipeError:
            os._exit(0)
    if os.environ.get("FLOOD_OPEN"):
        time.sleep(60)
    sys.stdout.buffer.write(b'"}]}}\n'); sys.stdout.flush()
for line in sys.stdin:
    msg = json.loads(line)
    method, msg_id = msg.get("method"), msg.get("id")
    if method == "initialize":
        if os.environ.get("FLOOD_AT") == "start":
            flood(msg_id)
        send({"jsonrpc": "2.0", "id": msg_id, "result": {
            "protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
            "serverInfo": {"name": "flood", "version": "0"}}})
    elif method == "tools/list":
        tools = [{"name": n, "inputSchema": {"type": "object"}} for n in ("flood", "ok")]
        send({"jsonrpc": "2.0", "id": msg_id, "result": {"tools": tools}})
    elif method == "tools/call" and msg["params"]["name"] == "flood":
        flood(msg_id)
    elif method == "tools/call":
        send({"jsonrpc": "2.0", "id": msg_id, "result": {"content": [{"type": "text", "text": "OK-%d" % os.getpid()}]}})
"""


def _runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **env: str) -> shellrt.Runtime:
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    home.mkdir()
    server = tmp_path / "flood.py"
    server.write_text(_SERVER)
    monkeypatch.setenv("HOME", str(home))  # no user settings leak in
    monkeypatch.setenv("SHELLRT_HOME", str(tmp_path / "state"))
    config = {"command": sys.executable, "args": [str(server)], "env": env}
    write_settings(ws, {"srv": config}, permissions={"allow": ["mcp__srv"]})
    return shellrt.Runtime(ws, "local", session_dir=tmp_path / "session", trust_workspace=True)


async def _call(rt: shellrt.Runtime, tool: str, n: int) -> tuple[bool, str]:
    select = ToolUseBlock(id=f"r10sel{n}", name="ToolSearch", input={"query": f"select:mcp__srv__{tool}"})
    await rt.run_envelopes([select])  # MCP tools are deferred: load it first
    (envelope,) = await rt.run_envelopes([ToolUseBlock(id=f"r10line{n}", name=f"mcp__srv__{tool}", input={})])
    return envelope.is_error, envelope.audit


@pytest.mark.parametrize("ended", [True, False], ids=["line-ends", "line-never-ends"])
async def test_a_line_past_the_bound_fails_the_call_clearly_and_the_server_restarts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ended: bool
) -> None:
    flood_mib = MAX_LINE_BYTES // (1 << 20) + 32
    env = {"FLOOD_MIB": str(flood_mib), **({} if ended else {"FLOOD_OPEN": "1"})}
    async with _runtime(tmp_path, monkeypatch, **env) as rt:
        started = time.monotonic()
        is_error, text = await _call(rt, "flood", 1)
        took = time.monotonic() - started
        assert is_error, text[:300]
        assert "longer than shellrt takes" in text and f"{MAX_LINE_BYTES:,} bytes" in text, text[:500]
        assert took < 20, f"the flood took {took:.1f}s to refuse"
        is_error, text = await _call(rt, "ok", 2)  # a fresh server answers
        assert not is_error and "OK-" in text, text[:300]


async def test_a_line_within_the_bound_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with _runtime(tmp_path, monkeypatch, FLOOD_MIB="8") as rt:
        is_error, text = await _call(rt, "flood", 3)
    assert not is_error, text[:300]


async def test_a_flooded_handshake_is_a_clear_start_up_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    flood_mib = MAX_LINE_BYTES // (1 << 20) + 32
    async with _runtime(tmp_path, monkeypatch, FLOOD_MIB=str(flood_mib), FLOOD_AT="start") as rt:
        diagnostics = " ".join(str(d) for d in rt.diagnostics)
    assert "could not be started" in diagnostics and "longer than shellrt takes" in diagnostics, diagnostics
