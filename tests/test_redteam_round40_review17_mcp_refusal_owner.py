"""Red team, round 40 (review17): an MCP connection's refused answer was reported on another call.

Round 40 (iface3) noted each answer the HTTP client refuses (compressed, too long) on the
connection, and a call that failed with any JSON-RPC error took the oldest note as its reason.
The SDK also reads a standalone event stream (GET) for the server's own messages: a server that
compresses that stream had it refused (and noted, once per reconnection), and the next call the
server rejected in its own words ("no such widget") read "did not complete ask: ... sent a
'gzip'-compressed answer": the server's reason was lost, a refusal of no call reported on this
one. Only the answers to requests are noted now, and a call takes the refusal its own error
names. Real ``Runtime`` (local backend), a real HTTP MCP server process on 127.0.0.1.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

import shellrt
from tests._mcp_support import write_settings

pytestmark = pytest.mark.anyio

_SERVER = r"""
import gzip, json, sys
from pathlib import Path
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MARK = Path(sys.argv[2])

class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def _send(self, body, kind="application/json", encoding=None):
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Mcp-Session-Id", "s1")
        if encoding:
            self.send_header("Content-Encoding", encoding)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_GET(self):  # the standalone stream, compressed
        with MARK.open("a") as f:
            f.write("get\n")
        self._send(gzip.compress(b": hello\n\n"), "text/event-stream", "gzip")
    def do_DELETE(self):
        self.send_response(200); self.send_header("Content-Length", "0"); self.end_headers()
    def do_POST(self):
        msg = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if "id" not in msg:
            self.send_response(202); self.send_header("Mcp-Session-Id", "s1")
            self.send_header("Content-Length", "0"); self.end_headers(); return
        if msg["method"] == "initialize":
            result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                      "serverInfo": {"name": "gz", "version": "0"}}
        elif msg["method"] == "tools/list":
            result = {"tools": [{"name": "ask", "inputSchema": {"type": "object"},
                                 "_meta": {"anthropic/alwaysLoad": True}}]}
        elif msg["method"] == "tools/call":
            error = {"code": -32602, "message": "no such widget: say which widget to ask about"}
            return self._send(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "error": error}).encode())
        else:
            result = {}
        self._send(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}).encode())

ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_a_call_reports_its_own_error_not_a_refused_stream_of_no_call(tmp_path: Path) -> None:
    """Failed before: "did not complete ask: ... sent a 'gzip'-compressed answer"."""
    script, mark = tmp_path / "gz.py", tmp_path / "gets"
    script.write_text(_SERVER)
    port = _free_port()
    proc = subprocess.Popen([sys.executable, str(script), str(port), str(mark)])
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        ws = tmp_path / "ws"
        ws.mkdir()
        servers = {"gz": {"type": "http", "url": f"http://127.0.0.1:{port}/mcp", "startup_timeout": 60, "timeout": 30}}
        write_settings(ws, servers, permissions={"allow": ["mcp__gz__ask"]})
        async with shellrt.Runtime(ws, "local", trust_workspace=True, session_dir=tmp_path / "s") as rt:
            assert rt.registry.get("mcp__gz__ask") is not None, rt.mcp_diagnostics  # premise
            with anyio.fail_after(20):
                while not mark.exists():  # premise: the standalone stream was asked for (and refused)
                    await anyio.sleep(0.05)
            await anyio.sleep(0.5)
            with anyio.fail_after(60):
                answer = await rt.run({"role": "assistant", "content": [
                    {"type": "tool_use", "id": "toolu_1", "name": "mcp__gz__ask", "input": {}}
                ]})
    finally:
        proc.kill()
        proc.wait()
    block = answer["content"][0]
    text = str(block["content"])
    assert block["is_error"] is True, text[:300]
    assert "no such widget" in text, text[:400]
    assert "compressed" not in text, text[:400]
