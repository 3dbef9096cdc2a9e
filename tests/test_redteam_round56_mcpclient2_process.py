"""Round 56, mcpclient2: a stdio server that closes its stdout mid-call and keeps running.

The server answers ``initialize`` and ``tools/list``, then on ``tools/call`` closes its stdout,
ignores SIGTERM and sleeps. The call must end promptly (end of its output, not the call's
timeout) with an error saying the server went away, and leaving the session must stop it.
Held (no change needed); kept as a regression test. A real server on real pipes.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import anyio
import psutil

from shellrt.tools.mcp.connection import McpServerError
from shellrt.tools.mcp.manager import McpConnections
from tests._mcp_tiny_server import tiny_server

_CLOSE_AND_LINGER = """
import os, signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
sys.stdout.flush()
os.close(1)
open(PIDFILE, "w").write(str(os.getpid()))
time.sleep(300)
"""


def test_a_server_closing_stdout_mid_call_ends_the_call_and_is_stopped(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    source = tmp_path / "srv.py"
    source.write_text(tiny_server("", name="closer", call=_CLOSE_AND_LINGER.replace("PIDFILE", repr(str(pidfile)))))
    servers = {"c": {"command": sys.executable, "args": [str(source)], "startup_timeout": 60, "timeout": 60}}

    async def main() -> tuple[str, float]:
        with anyio.fail_after(90):
            return await calling()

    async def calling() -> tuple[str, float]:
        async with McpConnections(servers) as mcp:
            await mcp.tools()
            started = time.monotonic()
            try:
                await mcp.connections["c"].call_tool("echo", {})
            except McpServerError as exc:
                return str(exc), time.monotonic() - started
            return "answered", time.monotonic() - started

    message, took = anyio.run(main)
    assert "closed the connection" in message, message
    assert took < 20, f"waited {took:.1f}s: the call's timeout, not the end of the server's output"
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline, "the server outlived the session"
        time.sleep(0.05)
