"""Red team round 37 (iface): a client that pipelines requests and never reads does not grow the server.

uvicorn answers pipelined requests one at a time but kept every byte received meanwhile, and it
resumes reading whenever the app checks for a disconnect (twice a second for a running call, and
the SDK's event stream): 476,000 pipelined ``tools/list`` requests in 45 s took ~79 to ~390 MB.
"""

from __future__ import annotations

import contextlib
import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

from tests.test_mcp_http_auth import _INITIALIZE, TOKEN, Served, _post, served

_AUTH = {"Authorization": f"Bearer {TOKEN}"}


@contextlib.contextmanager
def _served(tmp: Path) -> Iterator[Served]:
    with served(tmp, env={"SHELLRT_SERVE_TOKEN": TOKEN}) as srv:
        yield srv


def _rss_mib(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(status.split("VmRSS:")[1].split()[0]) / 1024


def test_pipelined_requests_nobody_reads_stop_being_read(tmp_path: Path) -> None:
    """Failed before: the server grew by 60-90 MB within 10 s and went on reading. Now it holds
    at most `PIPELINE_LIMIT` unprocessed bytes of a connection, and serves other clients."""
    with _served(tmp_path) as srv:
        status, headers, _ = _post(srv.url, _INITIALIZE, _AUTH)
        session = {k.lower(): v for k, v in headers.items()}["mcp-session-id"]
        time.sleep(0.5)
        before = _rss_mib(srv.proc.pid)
        sent = 0
        with socket.create_connection(("127.0.0.1", srv.port)) as sock:
            sock.setblocking(False)
            end = time.monotonic() + 10
            pending = b""
            while time.monotonic() < end:
                if not pending:
                    body = json.dumps({"jsonrpc": "2.0", "id": 1000 + sent, "method": "tools/list"}).encode()
                    pending = (
                        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer %s\r\n"
                        b"Mcp-Session-Id: %s\r\nContent-Type: application/json\r\n"
                        b"Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n"
                        % (srv.port, TOKEN.encode(), session.encode(), len(body))
                    ) + body
                    sent += 1
                try:
                    pending = pending[sock.send(pending) :]
                except BlockingIOError:
                    time.sleep(0.05)
            grown = _rss_mib(srv.proc.pid) - before
            assert grown < 30, f"the server grew by {grown:.0f} MiB holding {sent} pipelined requests"
        status, _headers, body = _post(srv.url, _INITIALIZE, _AUTH)
        assert status == 200, (status, body)
