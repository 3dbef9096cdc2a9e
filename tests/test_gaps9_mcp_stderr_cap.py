"""Round 8's open gap: an MCP server's stderr log grew on disk without bound.

The server wrote straight into ``<session>/mcp-<name>.stderr.log``. A real server process
writes 24 MiB to stderr and fails to start; the log must stay under its cap, say what it
dropped, keep the tail (the start-up error still quotes the server's last line), and a
restarted server's lines are appended, not lost.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import shellrt

pytestmark = pytest.mark.anyio

_LOUD = (
    "import os, sys\nchunk = b'e' * (1 << 20)\nfor _ in range(24):\n    os.write(2, chunk)\n"
    "os.write(2, b'\\nLAST-LINE\\n')\nsys.exit(1)\n"
)


async def test_a_server_flooding_stderr_leaves_a_capped_log_with_its_tail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    server = tmp_path / "loud.py"
    server.write_text(_LOUD)
    monkeypatch.setenv("SHELLRT_HOME", str(tmp_path / "state"))
    servers = {"srv": {"command": sys.executable, "args": [str(server)]}}
    rt = shellrt.Runtime(
        ws, "local", settings={"mcpServers": servers}, use_settings=False, session_dir=tmp_path / "session"
    )
    async with rt:
        diagnostics = " ".join(str(d) for d in rt.diagnostics)
    assert "LAST-LINE" in diagnostics, diagnostics
    logs = list((tmp_path / "session").rglob("mcp-srv.stderr.log"))
    assert len(logs) == 1, logs
    data = logs[0].read_bytes()
    assert len(data) <= 4 * 1024 * 1024 + 200, len(data)  # the cap, and the note
    assert data.startswith(b"[shellrt: ") and b"earlier bytes of this log were dropped" in data[:200]
    assert data.rstrip().endswith(b"LAST-LINE")


def test_the_log_appends_and_cuts_back_to_the_tail(tmp_path: Path) -> None:
    from shellrt.tools.mcp._stderr_log import LOG_CAP_BYTES, CappedLog

    assert LOG_CAP_BYTES == 4 * 1024 * 1024
    path = tmp_path / "x.log"
    path.write_bytes(b"from an earlier start\n")
    log = CappedLog(path, cap=1000)
    log.writer.write("a" * 300 + "\n")
    log.writer.flush()
    log.settle()
    assert path.read_bytes() == b"from an earlier start\n" + b"a" * 300 + b"\n"
    log.writer.write("b" * 900 + "\nEND\n")
    log.writer.close()
    log.settle()
    data = path.read_bytes()
    assert data.startswith(b"[shellrt: ") and data.endswith(b"b" * 100 + b"\nEND\n"), data[:120]
    assert len(data) < 1000
