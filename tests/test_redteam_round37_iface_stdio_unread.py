"""Red team round 37 (iface): an MCP stdio client that sends and never reads does not grow the server.

The SDK starts a handler for every request it reads; an answer nobody reads waits in its handler.
The wire read stdin as fast as it could, so a client that wrote requests without reading stdout grew
the server without bound (pings: ~80 to 184 MB in 15 s, ``tools/list``: ~3 MB/s, on and on).
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path

from tests._serve_cli import serve_command

_PINGS = 5000


def _rss_kib(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(status.split("VmRSS:")[1].split()[0])


def test_a_client_that_does_not_read_stops_being_read(tmp_path: Path) -> None:
    """Failed before: RSS grew by ~50-75 MB in 10 s (the server read every request and held its
    answer). Now the server stops reading at `MAX_REQUESTS_IN_FLIGHT` unanswered requests, and
    once the client reads, every request has exactly one answer (a result or a refusal)."""
    argv, env = serve_command(tmp_path, "--mode", "bypassPermissions")
    proc = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout
    try:
        init = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}},
        }
        stdin.write(json.dumps(init).encode() + b"\n")
        stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        stdin.flush()
        assert b'"id":0' in stdout.readline()
        time.sleep(0.5)
        before = _rss_kib(proc.pid)

        def flood() -> None:
            for i in range(1, _PINGS + 1):
                stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": "ping"}).encode() + b"\n")
            stdin.flush()

        writer = threading.Thread(target=flood, daemon=True)
        writer.start()
        time.sleep(10)
        grown_mib = (_rss_kib(proc.pid) - before) / 1024
        assert grown_mib < 25, f"the server grew by {grown_mib:.0f} MiB holding answers nobody read"

        answers: dict[int, int] = {}
        refused = 0
        deadline = time.monotonic() + 120
        while len(answers) < _PINGS and time.monotonic() < deadline:
            message = json.loads(stdout.readline())
            answers[message["id"]] = answers.get(message["id"], 0) + 1
            if "error" in message:
                refused += 1
                assert "Read the answers before sending more" in message["error"]["message"], message
        writer.join(10)
        assert sorted(answers) == list(range(1, _PINGS + 1)) and set(answers.values()) == {1}
        assert refused < _PINGS  # most were answered once the client read
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait(10)
