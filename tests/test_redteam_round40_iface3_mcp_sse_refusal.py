"""Red team, round 40 (iface3): a remote MCP server's refused event stream read as a crash.

Round 39 refused a compressed answer from a streamable-HTTP MCP server, but for an event stream
(``text/event-stream``) the SDK's reader takes any error as "the stream ended": the call failed
as "closed the connection during the call (it may have crashed)", and the reason (a compressed
answer shellrt does not take) was lost. A refused answer of any kind is now noted where the
connection's error is written, and the call's error gives it. Real ``Runtime`` (local backend),
a real HTTP MCP server process on 127.0.0.1.
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
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def _send(self, body, kind="application/json", encoding=None):
        self.send_response(200)
        self.send_header("Content-Type", kind)
        if encoding:
            self.send_header("Content-Encoding", encoding)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_GET(self):
        self.send_response(405); self.send_header("Content-Length", "0"); self.end_headers()
    def do_DELETE(self):
        self.send_response(200); self.send_header("Content-Length", "0"); self.end_headers()
    def do_POST(self):
        msg = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if "id" not in msg:
            self.send_response(202); self.send_header("Content-Length", "0"); self.end_headers(); return
        if msg["method"] == "initialize":
            result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                      "serverInfo": {"name": "gz", "version": "0"}}
        elif msg["method"] == "tools/list":
            result = {"tools": [{"name": "big", "inputSchema": {"type": "object"},
                                 "_meta": {"anthropic/alwaysLoad": True}}]}
        elif msg["method"] == "tools/call":
            answer = {"jsonrpc": "2.0", "id": msg["id"], "result": {"content": [{"type": "text", "text": "a" * 100000}]}}
            event = b"event: message\ndata: " + json.dumps(answer).encode() + b"\n\n"
            return self._send(gzip.compress(event), "text/event-stream", "gzip")
        else:
            result = {}
        self._send(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}).encode())

ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_a_compressed_event_stream_is_refused_in_words(tmp_path: Path) -> None:
    """Failed before: "closed the connection during the call (it may have crashed)"."""
    script = tmp_path / "gz.py"
    script.write_text(_SERVER)
    port = _free_port()
    proc = subprocess.Popen([sys.executable, str(script), str(port)])
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
        write_settings(ws, servers, permissions={"allow": ["mcp__gz__big"]})
        async with shellrt.Runtime(ws, "local", trust_workspace=True, session_dir=tmp_path / "s") as rt:
            assert rt.registry.get("mcp__gz__big") is not None, rt.mcp_diagnostics  # premise
            with anyio.fail_after(60):
                answer = await rt.run({"role": "assistant", "content": [
                    {"type": "tool_use", "id": "toolu_1", "name": "mcp__gz__big", "input": {}}
                ]})
    finally:
        proc.kill()
        proc.wait()
    block = answer["content"][0]
    text = str(block["content"])
    assert block["is_error"] is True, text[:300]
    assert "'gzip'-compressed" in text and "configure it to send uncompressed" in text, text[:400]
    assert "may have crashed" not in text, text[:400]
