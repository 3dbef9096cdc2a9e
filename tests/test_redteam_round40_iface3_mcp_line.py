"""Red team, round 40 (iface3): a client's long line cost ``shellrt serve`` its whole parse.

The MCP stdio server read lines of up to 64 MiB whole, copied each, parsed it twice and handed
it to the runtime, which then refused the input as past its 4 Mi characters: a 60 MiB line cost
246 MB of peak memory and 0.74 s of CPU, six in a row 450 MB and 4 s. No MCP message needs more
than one tool input and its envelope: a longer line is now skipped as it is read, and a shorter
one whose bytes prove it past the input bound is refused before it is parsed. Real ``shellrt
serve`` (stdio) on pipes, memory read from ``/proc/<pid>/status``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests._mcp_support import ROOT, isolated_env

MiB = 1024 * 1024


@contextmanager
def _serve(tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    home.mkdir()
    env = {**isolated_env(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    with open(home / "serve.stderr.log", "w") as errlog:
        proc = subprocess.Popen(
            [sys.executable, "-m", "shellrt", "serve", "--workspace", str(ws), "--sandbox", "local", "--trust-workspace"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errlog, env=env, cwd=str(ROOT),
        )
    try:
        _send(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
        assert "result" in _recv(proc)
        _send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        yield proc
    finally:
        proc.kill()
        proc.wait()


def _send(proc: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(message).encode() + b"\n")
    proc.stdin.flush()


def _recv(proc: subprocess.Popen[bytes]) -> dict[str, Any]:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, "the server ended"
    answer: dict[str, Any] = json.loads(line)
    return answer


def _peak_bytes(pid: int) -> int:
    for row in Path(f"/proc/{pid}/status").read_text().splitlines():
        if row.startswith("VmHWM:"):
            return int(row.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def _call_line(request_id: int, chars: int) -> bytes:
    return (
        b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"Bash","arguments":{"command":"'
        % request_id + b"x" * chars + b'"}}}\n'
    )


def _still_serves(proc: subprocess.Popen[bytes]) -> None:
    _send(proc, {"jsonrpc": "2.0", "id": 99, "method": "tools/list"})
    answer = _recv(proc)
    assert answer["id"] == 99 and answer["result"]["tools"], str(answer)[:300]


def test_a_line_longer_than_any_message_is_skipped_as_it_is_read(tmp_path: Path) -> None:
    """Failed before: a 40 MiB line was read whole and parsed (+170 MB), then refused by the runtime."""
    with _serve(tmp_path) as proc:
        before = _peak_bytes(proc.pid)
        assert proc.stdin is not None
        proc.stdin.write(_call_line(2, 40 * MiB))
        proc.stdin.flush()
        answer = _recv(proc)
        grown = _peak_bytes(proc.pid) - before
        assert "error" in answer, str(answer)[:300]
        message = answer["error"]["message"]
        assert "skipped unread" in message and "Write the first part" in message, message
        assert grown < 48 * MiB, f"the server's peak grew {grown:,} bytes for one refused line"
        _still_serves(proc)


def test_lines_whose_bytes_prove_them_past_the_input_bound_are_refused_unparsed(tmp_path: Path) -> None:
    """Failed before: each 20 MiB call was parsed twice and answered as a tool error (+100 MB peak)."""
    with _serve(tmp_path) as proc:
        before = _peak_bytes(proc.pid)
        assert proc.stdin is not None
        for request_id in (2, 3, 4):
            proc.stdin.write(_call_line(request_id, 20 * MiB))
            proc.stdin.flush()
        answers = [_recv(proc) for _ in range(3)]
        grown = _peak_bytes(proc.pid) - before
        for request_id, answer in zip((2, 3, 4), answers, strict=True):
            assert answer.get("id") == request_id and "error" in answer, str(answer)[:300]
            message = answer["error"]["message"]
            assert "4,194,304" in message and "it was not read" in message, message
        assert grown < 72 * MiB, f"the server's peak grew {grown:,} bytes for three refused lines"
        _still_serves(proc)


def test_a_call_of_the_largest_input_still_runs(tmp_path: Path) -> None:
    """The control: an input just under the bound, every character escaped, is not refused here."""
    with _serve(tmp_path) as proc:
        text = "\u00e9" * (4 * MiB - 4096)
        _send(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                     "params": {"name": "Write", "arguments": {"file_path": "big.txt", "content": text}}})
        answer = _recv(proc)
        assert "result" in answer, str(answer)[:300]
        assert "not read" not in json.dumps(answer)[:2000], str(answer)[:300]
