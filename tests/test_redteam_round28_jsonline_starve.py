"""Round 28, jsonline: one huge line of many small values stalled every other request of a server.

Each wire parses a line (an HTTP body) on the event loop before anything else, and Python's and
pydantic's JSON readers hold the GIL for the whole line, so a client's 10 MB of ``[],`` held the
loop for seconds (MCP stdio: strict reader and then pydantic, ~8 s for 12 MB): an interrupt, a
ping, a cancel sent meanwhile waited. A line over 1 MB is now counted first (its ``[ { , :``) and
refused past 1,000,000 of them; the line after it is served at once. Real pipes, the local backend.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.server._http_strict import StrictJsonBodyMiddleware
from shellrt.server._mcp_stdio import StdioWire
from tests._serve_cli import serve_command

#: 12 MB of empty arrays: 8 million structural characters, ~1.5 s for Python's reader when idle.
_HUGE = b"[" + b"[]," * 4_000_000 + b"[]]"
#: How soon the request sent after it must be served (~0.01 s when fixed; ~8 s before).
_PROMPT = 4.0  # round 49: 2 s, but the huge line's count ends later at load 15-30; 4 s is half the 8 s before


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def test_jsonl_interrupt_is_answered_while_a_huge_line_waits(tmp_path: Path) -> None:
    argv, env = serve_command(tmp_path, "--jsonl", "--mode", "bypassPermissions")
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    answers: list[tuple[float, dict[str, Any]]] = []
    stdout = proc.stdout

    def collect() -> None:
        for line in stdout:
            answers.append((time.monotonic(), json.loads(line)))

    reader = threading.Thread(target=collect, daemon=True)
    reader.start()
    try:
        fd = proc.stdin.fileno()
        _write_all(fd, b'{"type": "list_tools"}\n')
        deadline = time.monotonic() + 60
        while not answers and time.monotonic() < deadline:
            time.sleep(0.02)
        assert answers and answers[0][1]["type"] == "tools", answers
        _write_all(fd, _HUGE + b"\n")  # returns once the server has read all but the pipe's 64 KB
        time.sleep(0.3)
        sent = time.monotonic()
        _write_all(fd, b'{"type": "interrupt"}\n{"type": "list_tools"}\n')
        proc.stdin.close()
        proc.wait(timeout=120)
        reader.join(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    at = next(t for t, a in answers if a.get("type") == "interrupted")
    assert at - sent < _PROMPT, f"the interrupt was answered {at - sent:.1f} s after it was sent"
    kinds = [a.get("type") for _, a in answers]
    assert kinds in (["tools", "error", "interrupted", "tools"], ["tools", "interrupted", "error", "tools"]), answers
    error = next(a for _, a in answers if a["type"] == "error")
    assert error["line"] == 2 and "1,000,000" in error["error"] and "Send fewer values" in error["error"], error


@pytest.mark.anyio
async def test_mcp_stdio_serves_the_next_request_at_once() -> None:
    client_out, server_in = os.pipe()
    server_out, client_in = os.pipe()
    wire = StdioWire(client_out, client_in)
    send, receive = anyio.create_memory_object_stream[Any](10)
    answers = os.fdopen(server_out, "rb")
    big_ok = b'{"jsonrpc":"2.0","id":3,"method":"ping","params":{"_meta":{"pad":"' + b"x" * (3 << 20) + b'"}}}\n'
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(wire.reader, send)
            with anyio.fail_after(60):
                huge = b'{"jsonrpc":"2.0","id":"big","method":"tools/call","params":' + _HUGE + b"}\n"
                await anyio.to_thread.run_sync(_write_all, server_in, huge)
                await anyio.sleep(0.3)
                sent = time.monotonic()
                await anyio.to_thread.run_sync(_write_all, server_in, b'{"jsonrpc":"2.0","id":7,"method":"ping"}\n')
                message = await receive.receive()
                took = time.monotonic() - sent
                assert message.message.id == 7, message
                assert took < _PROMPT, f"the ping sent after the huge line came {took:.1f} s later"
                refusal = json.loads(await anyio.to_thread.run_sync(answers.readline))
                assert refusal["id"] == "big" and refusal["error"]["code"] == -32600, refusal
                assert "1,000,000" in refusal["error"]["message"], refusal
                # A big line within the count is still read (in a worker thread), and bad JSON as before.
                await anyio.to_thread.run_sync(_write_all, server_in, big_ok + b'{"a":"' + b"x" * (2 << 20) + b"\n")
                message = await receive.receive()
                assert message.message.id == 3
                bad = json.loads(await anyio.to_thread.run_sync(answers.readline))
                assert bad == {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error: the line is not valid JSON"}}, bad
            tg.cancel_scope.cancel()
    finally:
        answers.close()
        for fd in (server_in, client_out, client_in):
            os.close(fd)


@pytest.mark.anyio
async def test_http_body_check_does_not_hold_the_loop() -> None:
    reached: list[bytes] = []
    sent: list[dict[str, Any]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        reached.append((await receive())["body"])

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b'{"id": 5, "params": ' + _HUGE + b"}", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    started = time.process_time()
    await StrictJsonBodyMiddleware(app)({"type": "http", "method": "POST", "headers": []}, receive, send)
    spent = time.process_time() - started
    assert spent < 0.5, f"the body check took {spent:.2f} s of CPU on the event loop"
    assert not reached, "the body reached the SDK's reader"
    assert sent[0]["status"] == 413, sent
    # Round 29: an HTTP body holds at most 50,000 such characters (`_http_values`), of any size.
    assert json.loads(sent[1]["body"])["id"] == 5 and b"50,000" in sent[1]["body"], sent[1]
