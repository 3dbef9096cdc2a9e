"""Red team, round 39 (iface2): a remote MCP server's JSON answer was read without a bound.

A stdio server's line is cut at 64 MiB (round 8), an SSE event at the SDK's 1 MiB; a streamable-HTTP
server that answers with ``Content-Type: application/json`` is read by the SDK with
``response.aread()``: the whole body into memory, however long, then parsed. A configured remote
MCP server (or anything on its path) sending an endless body grew the shellrt process without end.
Every non-stream answer of an MCP server is now cut at the stdio bound: the call fails, saying so.
Real ``Runtime`` (local backend), a real HTTP server process on 127.0.0.1.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

import shellrt
from tests._mcp_support import write_settings

pytestmark = pytest.mark.anyio

#: What the hostile server sends at most (then ends the body); the bound is 64 MiB.
_SENT_MB = 160

_SERVER = r"""
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SENT = sys.argv[2]
LIMIT = int(sys.argv[3]) << 20

class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def _json(self, obj, code=200):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
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
            return self._json({"jsonrpc": "2.0", "id": msg["id"], "result": {
                "protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                "serverInfo": {"name": "big", "version": "0"}}})
        if msg["method"] == "tools/list":
            return self._json({"jsonrpc": "2.0", "id": msg["id"], "result": {"tools": [
                {"name": "big", "inputSchema": {"type": "object"}, "_meta": {"anthropic/alwaysLoad": True}}]}})
        if msg["method"] != "tools/call":
            return self._json({"jsonrpc": "2.0", "id": msg["id"], "result": {}})
        head = ('{"jsonrpc": "2.0", "id": %s, "result": {"content": [{"type": "text", "text": "' % json.dumps(msg["id"])).encode()
        tail = b'"}]}}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        chunk = b"a" * (1 << 20)
        sent = 0
        try:
            for part in [head] + [chunk] * (LIMIT >> 20) + [tail]:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                sent += len(part)
                with open(SENT, "w") as fh:
                    fh.write(str(sent))
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            pass

ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _call_remote(tmp_path: Path, server_source: str, name: str) -> tuple[dict[str, Any], str]:
    """Start ``server_source`` on a free port, call its ``big`` tool through a Runtime and return the
    result block and what the server wrote to its ``sent`` file (after the server is gone)."""
    script = tmp_path / f"{name}.py"
    script.write_text(server_source)
    sent = tmp_path / "sent"
    port = _free_port()
    proc = subprocess.Popen([sys.executable, str(script), str(port), str(sent), str(_SENT_MB)])
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
        servers = {name: {"type": "http", "url": f"http://127.0.0.1:{port}/mcp", "startup_timeout": 60}}
        write_settings(ws, servers, permissions={"allow": [f"mcp__{name}__big"]})
        async with shellrt.Runtime(ws, "local", trust_workspace=True, session_dir=tmp_path / "s") as rt:
            assert rt.registry.get(f"mcp__{name}__big") is not None, rt.mcp_diagnostics  # premise
            with anyio.fail_after(120):
                answer = await rt.run({"role": "assistant", "content": [
                    {"type": "tool_use", "id": "toolu_1", "name": f"mcp__{name}__big", "input": {}}
                ]})
        await anyio.sleep(0.5)
    finally:
        proc.kill()
        proc.wait()
    return answer["content"][0], (sent.read_text() if sent.exists() else "")


async def test_a_remote_servers_endless_json_answer_is_cut(tmp_path: Path) -> None:
    """Failed before: the whole 160 MiB body was read (into memory, then a 160 MiB result). Now the
    client stops reading past 64 MiB and the call is an error that says why."""
    block, sent = await _call_remote(tmp_path, _SERVER, "big")
    total = int(sent or 0)
    text = str(block["content"])
    assert total < (_SENT_MB - 32) << 20, f"shellrt read {total:,} bytes of one answer (sent all of them)"
    assert block["is_error"] is True, text[:300]
    assert "67,108,864" in text, text[:300]


_GZIP_SERVER = _SERVER.replace(
    '        self.send_response(200)\n        self.send_header("Content-Type", "application/json")\n'
    '        self.send_header("Transfer-Encoding", "chunked")',
    '        import gzip, io\n'
    '        body = gzip.compress(head + b"a" * (LIMIT) + tail, 9)\n'
    '        with open(SENT, "w") as fh:\n'
    '            fh.write(str(len(body)))\n'
    '        self.send_response(200)\n        self.send_header("Content-Type", "application/json")\n'
    '        self.send_header("Content-Encoding", "gzip")\n'
    '        self.send_header("Content-Length", str(len(body)))\n'
    '        self.end_headers()\n'
    '        self.wfile.write(body)\n'
    '        return\n'
    '        self.send_header("Transfer-Encoding", "chunked")',
)


async def test_a_remote_servers_compressed_answer_is_refused(tmp_path: Path) -> None:
    """Failed before: 160 KiB of gzip became a 160 MiB answer (and a bomb of any ratio would have
    been decoded whole). Now an answer compressed unasked is refused, saying so."""
    assert _GZIP_SERVER != _SERVER  # premise: the replacement took
    block, sent = await _call_remote(tmp_path, _GZIP_SERVER, "gz")
    text = str(block["content"])
    assert int(sent) < 1 << 20  # premise: under 1 MiB on the wire
    assert block["is_error"] is True, f"{len(text):,} characters: {text[:200]}"
    assert "compressed" in text, text[:300]
