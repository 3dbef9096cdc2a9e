"""MCP stdio under hostile lines and a client that goes away, over real pipes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio

from tests._mcp_support import ROOT, isolated_env
from tests._serve_cli import bypass_serve_argv, start_http_serve
from tests.test_server_jsonl import marker_pids


class RawMcp:
    """``shellrt serve`` (MCP stdio) driven line by line, as a client that may misbehave."""

    def __init__(self, tmp_path: Path) -> None:
        workspace = tmp_path / "ws"
        workspace.mkdir()
        self.proc = subprocess.Popen(
            bypass_serve_argv(workspace),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, **isolated_env(tmp_path)},
            cwd=str(ROOT),
        )
        self.send(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "1"},
                },
            }
        )
        assert self.read()["id"] == 0
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send_raw(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode("utf-8", "surrogatepass") + b"\n")
        self.proc.stdin.flush()

    def send(self, value: Any) -> None:
        self.send_raw(json.dumps(value))

    def read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, "the server closed stdout"
        answer: dict[str, Any] = json.loads(line)
        return answer

    def call(self, id_: int, name: str, arguments: dict[str, Any]) -> None:
        self.send(
            {
                "jsonrpc": "2.0",
                "id": id_,
                "method": "tools/call",
                "params": {"name": name, "arguments": arguments},
            }
        )


def test_every_malformed_request_gets_a_json_rpc_error(tmp_path: Path) -> None:
    mcp = RawMcp(tmp_path)
    try:
        mcp.send_raw("garbage")
        assert mcp.read()["error"]["code"] == -32700
        mcp.send_raw(
            '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"X\\udfff","arguments":{}}}'
        )
        answer = mcp.read()
        assert answer["id"] == 7 and answer["error"]["code"] == -32600, answer
        mcp.send_raw('{"id": "no-method"}')
        answer = mcp.read()
        assert answer["id"] == "no-method" and "error" in answer
        mcp.call(8, "Bash", {"command": "exit 3"})
        answer = mcp.read()
        assert answer["id"] == 8 and answer["result"]["isError"] is True, answer
    finally:
        mcp.proc.kill()
        mcp.proc.wait()


def test_a_client_that_goes_away_has_its_calls_and_tasks_killed_at_once(tmp_path: Path) -> None:
    mcp = RawMcp(tmp_path)
    marker = f"mcp-gone-{time.time_ns()}"
    try:
        mcp.call(1, "Bash", {"command": f"sleep 1000 # {marker}-bg", "run_in_background": True})
        assert mcp.read()["id"] == 1
        mcp.call(2, "Bash", {"command": f"sleep 400 # {marker}-fg"})
        deadline = time.monotonic() + 20
        while len(marker_pids(marker)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(marker_pids(marker)) == 2
        assert mcp.proc.stdin is not None
        mcp.proc.stdin.close()  # the client is gone (as when it is killed)
        start = time.monotonic()
        mcp.proc.wait(60)
        took = time.monotonic() - start
    finally:
        if mcp.proc.poll() is None:
            mcp.proc.kill()
    assert not marker_pids(marker)
    assert took < 30, f"the server took {took:.1f}s to stop a gone client's work (the Bash timeout is 120s)"


def test_sigint_stops_mcp_stdio_while_stdin_is_open(tmp_path: Path) -> None:
    mcp = RawMcp(tmp_path)
    try:
        mcp.proc.send_signal(signal.SIGINT)
        code = mcp.proc.wait(30)
    finally:
        if mcp.proc.poll() is None:
            mcp.proc.kill()
    assert code == 128 + signal.SIGINT


def test_http_session_end_stops_its_background_tasks_and_sigterm_leaves_nothing(tmp_path: Path) -> None:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    from tests.test_mcp_server import _free_port, _wait_for_port

    port = _free_port()
    marker = f"mcp-http-{time.time_ns()}"
    server = start_http_serve(tmp_path, port, _TOKEN)

    async def client(command: str) -> None:
        await _wait_for_port(port)
        url = f"http://127.0.0.1:{port}/mcp"
        async with (
            create_mcp_http_client(headers={"Authorization": f"Bearer {_TOKEN}"}) as http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            await session.call_tool("Bash", {"command": command, "run_in_background": True})

    try:
        anyio.run(client, f"sleep 1000 # {marker}-a")
        deadline = time.monotonic() + 20  # the session ended with the client: its task goes
        while marker_pids(f"{marker}-a") and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not marker_pids(f"{marker}-a"), "a background task outlived its MCP session"
        server.send_signal(signal.SIGTERM)
        server.wait(30)
    finally:
        if server.poll() is None:
            server.kill()
    assert not marker_pids(marker)


#: The bearer token the HTTP tests' servers get through $SHELLRT_SERVE_TOKEN.
_TOKEN = "faults-test-token-0123456789"

_HTTP_CLIENT = """
import anyio, os, sys
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
async def main():
    headers = {"Authorization": "Bearer " + os.environ["SHELLRT_SERVE_TOKEN"]}
    async with create_mcp_http_client(headers=headers) as http, streamable_http_client(sys.argv[1], http_client=http) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            await s.call_tool("Bash", {"command": sys.argv[2]})
anyio.run(main)
"""


def test_http_client_killed_mid_call_has_its_call_cancelled_at_once(tmp_path: Path) -> None:
    from tests.test_mcp_server import _free_port, _wait_for_port

    port = _free_port()
    marker = f"mcp-http-kill-{time.time_ns()}"
    env = {**os.environ, **isolated_env(tmp_path), "SHELLRT_SERVE_TOKEN": _TOKEN}
    server = start_http_serve(tmp_path, port, _TOKEN)
    client = None
    try:
        anyio.run(_wait_for_port, port)
        client = subprocess.Popen(
            [sys.executable, "-c", _HTTP_CLIENT, f"http://127.0.0.1:{port}/mcp", f"sleep 400 # {marker}"],
            env=env,
        )
        deadline = time.monotonic() + 30
        while not marker_pids(marker) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert marker_pids(marker), "the call never started"
        client.kill()
        client.wait()
        deadline = time.monotonic() + 20  # "at once": well before the 120 s Bash timeout
        while marker_pids(marker) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not marker_pids(marker), "a killed HTTP client's call kept running"
        assert server.poll() is None, "the server must keep serving other clients"
    finally:
        if client is not None and client.poll() is None:
            client.kill()
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
