"""Round 36, mcp: a stdio server that exited when its stdin closed left its children running.

At shutdown the transport closes the server's stdin and waits for it to exit; only a server that
did NOT exit in time had its process group terminated. A server that starts a child in its own
group (``sleep 1000 &``, a worker, a file watcher that ignores SIGHUP) and exits on end of input
left that child running after the session (here one ignoring SIGHUP and SIGTERM), every session one more. The group is now ended
whenever the server stops, whether or not its leader exited first. A real stdio server.

(A child that leaves the group with ``setsid`` still escapes: docs/security.md, round 36 "Left".)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import anyio
import psutil

from shellrt.tools.mcp.manager import McpConnections
from tests._mcp_tiny_server import tiny_server


def test_a_child_in_the_servers_group_ends_with_the_server(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    before = (
        "import signal, subprocess, sys\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import signal, time; "
        "signal.signal(signal.SIGHUP, signal.SIG_IGN); signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(1000)'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
    )
    server = tmp_path / "server.py"
    server.write_text(tiny_server(before))  # the loop ends at end of input: the server exits
    servers = {"leaky": {"command": sys.executable, "args": [str(server)], "startup_timeout": 60}}

    async def main() -> int:
        async with McpConnections(servers) as mcp:
            return len(await mcp.tools())

    assert anyio.run(main) == 1
    try:
        child = psutil.Process(int(pid_file.read_text()))
    except psutil.NoSuchProcess:
        return  # gone and reaped
    try:
        deadline = time.monotonic() + 5
        while child.is_running() and child.status() != psutil.STATUS_ZOMBIE and time.monotonic() < deadline:
            time.sleep(0.05)
        alive = child.is_running() and child.status() != psutil.STATUS_ZOMBIE
        assert not alive, f"the server's child {child.pid} outlived the session"
    finally:
        if child.is_running():
            child.kill()
