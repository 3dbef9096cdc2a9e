"""Round 25, interfaces: JSON-RPC request ids a hostile or broken MCP client chooses.

- A request whose id is not a string or an integer (``1.5``, ``-0.0``, ``null``, ``true``, an
  object, an array) was read as a notification and dropped: no answer, the client waited forever.
  JSON-RPC 2.0 answers it ``-32600`` with id null.
- A request holding a number Python will not read (5,000 digits) was answered "Parse error" with
  id null: valid JSON, and the client waited forever for its own id.
- Two requests with one id in flight: the SDK overwrote the first one's entry, so the client's
  ``notifications/cancelled`` stopped only the second; the first call's process ran on, out of
  the client's reach (the SDK's own TODO: "duplicate ids blind-overwrite").

A real ``shellrt serve`` process over pipes (stdio) and over HTTP, local backend.
"""

from __future__ import annotations

import json
import os
import secrets
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests._mcp_support import ROOT, isolated_env
from tests.test_mcp_http_auth import TOKEN, _post, served
from tests.test_server_jsonl import marker_pids

#: Ids JSON-RPC requests may not carry (MCP: a string or an integer).
_BAD_IDS: list[Any] = [1.5, -0.0, None, True, {"a": 1}, [1]]


class Wire:
    """``shellrt serve`` (MCP stdio) read with deadlines: a missing answer fails, never hangs."""

    def __init__(
        self, tmp_path: Path, *, mode: tuple[str, ...] = ("--mode", "bypassPermissions"), **caps_env: Any
    ) -> None:
        """``mode``: the permission flags; ``caps_env``: ``capabilities`` the client declares and
        ``env`` added to the server's environment."""
        workspace = tmp_path / "ws"
        workspace.mkdir()
        argv = [sys.executable, "-m", "shellrt", "serve", "--workspace", str(workspace), "--sandbox", "local", *mode]
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, **isolated_env(tmp_path), **caps_env.get("env", {})},
            cwd=str(ROOT),
            bufsize=0,
        )
        self._buf = b""
        caps = caps_env.get("capabilities", {})
        info = {"name": "r", "version": "1"}
        self.send(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": caps, "clientInfo": info},
            }
        )
        assert self.read(90)["id"] == 0  # a shared, busy machine: start-up took over 30 s
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data + b"\n")

    def send(self, value: Any) -> None:
        self.send_raw(json.dumps(value).encode())

    def read(self, within: float = 60) -> dict[str, Any]:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + within
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([fd], [], [], max(left, 0))
            assert ready, f"no answer within {within} s"
            chunk = os.read(fd, 1 << 16)
            assert chunk, "the server closed stdout"
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        answer: dict[str, Any] = json.loads(line)
        return answer

    def call(self, msg_id: Any, command: str) -> None:
        params = {"name": "Bash", "arguments": {"command": command}}
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": "tools/call", "params": params})

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="module")
def wire(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Wire]:
    served_wire = Wire(tmp_path_factory.mktemp("r25ids"))
    try:
        yield served_wire
    finally:
        served_wire.close()


def test_a_request_whose_id_is_not_a_string_or_integer_is_answered(wire: Wire) -> None:
    for bad in _BAD_IDS:
        wire.send({"jsonrpc": "2.0", "id": bad, "method": "ping"})
        answer = wire.read()
        assert answer["id"] is None and answer["error"]["code"] == -32600, (bad, answer)
        assert "id" in answer["error"]["message"], answer
    wire.send({"jsonrpc": "2.0", "id": 1.5, "method": "tools/call", "params": {"name": "Bash", "arguments": {}}})
    assert wire.read()["error"]["code"] == -32600
    wire.send({"jsonrpc": "2.0", "id": 77, "method": "ping"})
    assert wire.read() == {"jsonrpc": "2.0", "id": 77, "result": {}}


def test_a_number_python_cannot_read_is_refused_under_the_request_id(wire: Wire) -> None:
    huge = "9" * 5000
    wire.send_raw(
        b'{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"Bash","arguments":'
        b'{"command":"echo hi","timeout":' + huge.encode() + b"}}}"
    )
    answer = wire.read()
    assert answer["id"] == 6 and answer["error"]["code"] == -32600, answer
    assert "shorter number" in answer["error"]["message"], answer
    wire.send_raw(b'{"jsonrpc":"2.0","id":' + huge.encode() + b',"method":"ping"}')
    answer = wire.read()
    assert answer["id"] is None and "shorter number" in answer["error"]["message"], answer


def test_an_id_in_flight_is_not_taken_again_and_its_call_stays_cancellable(wire: Wire) -> None:
    first, second = (f"{n}.{secrets.randbelow(10**6):06d}" for n in (41, 42))
    wire.call(5, f"sleep {first}")
    deadline = time.monotonic() + 20
    while not marker_pids(first) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker_pids(first), "the first call did not start"
    wire.call(5, f"sleep {second}")
    answer = wire.read()
    assert answer["id"] == 5 and answer["error"]["code"] == -32600, answer
    assert "in use" in answer["error"]["message"], answer
    assert not marker_pids(second), "the second request with the same id ran"
    wire.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}})
    deadline = time.monotonic() + 20
    while marker_pids(first) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not marker_pids(first), "the client's cancel did not reach the call that holds the id"
    # Once the call is over (cancelled, never answered), its id is free again.
    wire.call(5, "echo again")
    answer = wire.read()
    assert answer["id"] == 5 and "again" in answer["result"]["content"][0]["text"], answer
    wire.call(5, "echo and again")
    assert "and again" in wire.read()["result"]["content"][0]["text"]


def test_http_request_ids_are_checked_as_on_stdio(tmp_path: Path) -> None:
    """One server for both: a bad id is answered; an id in flight in a session is not taken again."""
    with served(tmp_path, env={"SHELLRT_SERVE_TOKEN": TOKEN}) as server:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        init = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "r", "version": "1"}},
        }
        status, got, _ = _post(server.url, init, headers)
        assert status == 200
        session = {**headers, "Mcp-Session-Id": got.get("mcp-session-id") or got["Mcp-Session-Id"]}
        _post(server.url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
        for bad in _BAD_IDS:
            status, _, body = _post(server.url, {"jsonrpc": "2.0", "id": bad, "method": "ping"}, session)
            assert status == 400, (bad, status, body)
            answer = json.loads(body)
            assert answer["id"] is None and answer["error"]["code"] == -32600, (bad, answer)

        first, second = (f"{n}.{secrets.randbelow(10**6):06d}" for n in (43, 44))

        def call(command: str) -> tuple[int, dict[str, str], bytes]:
            params = {"name": "Bash", "arguments": {"command": command}}
            return _post(server.url, {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": params}, session)

        with ThreadPoolExecutor(1) as pool:
            running = pool.submit(call, f"sleep {first}")
            deadline = time.monotonic() + 20
            while not marker_pids(first) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert marker_pids(first), "the first call did not start"
            status, _, body = call(f"sleep {second}")
            assert not marker_pids(second), "the second request with the same id ran"
            assert status == 400 and "in use" in json.loads(body)["error"]["message"], (status, body)
            cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}}
            _post(server.url, cancel, session)
            running.result(30)
        assert not marker_pids(first), "the client's cancel did not reach the call that holds the id"
        status, _, body = call("echo free again")
        assert status == 200 and b"free again" in body, (status, body)
