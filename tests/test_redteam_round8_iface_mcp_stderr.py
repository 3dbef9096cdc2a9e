"""Red team round 8 (interfaces): an MCP server's stderr read whole into shellrt's memory.

shellrt logs each stdio MCP server's stderr to ``<session>/mcp-<name>.stderr.log`` and quotes its
last 1,500 characters when the server fails to start or dies. It read the whole log to take that
tail: a hostile (or broken) server that wrote a few hundred MB to stderr before failing grew the
host process by as much (every session of a ``serve`` process shares it), on every failed start
and every crash. Now only the tail is read. A real server process; memory measured as the
``ru_maxrss`` of a fresh interpreter doing nothing else, against a quiet server in the same run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

_PROBE = """
import anyio, json, resource, sys
import shellrt

async def main():
    rt = shellrt.Runtime(sys.argv[1], "local", settings={"mcpServers": json.loads(sys.argv[2])}, use_settings=False)
    async with rt:
        print(json.dumps({"diagnostics": rt.diagnostics,
                          "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))

anyio.run(main)
"""

#: 256 MiB of stderr, then a failed start.
_LOUD = "import os, sys\nchunk = b'e' * (1 << 20)\nfor _ in range(256):\n    os.write(2, chunk)\nos.write(2, b'\\nLAST-LINE\\n')\nsys.exit(1)\n"
_QUIET = "import os, sys\nos.write(2, b'LAST-LINE\\n')\nsys.exit(1)\n"


def _probe(tmp_path: Path, name: str, script: str) -> tuple[list[str], int]:
    """(diagnostics, ru_maxrss in KB) of a fresh process starting a session with this server."""
    ws = tmp_path / name
    ws.mkdir()
    server = tmp_path / f"{name}.py"
    server.write_text(script)
    servers = {"srv": {"command": sys.executable, "args": [str(server)]}}
    env = {
        **os.environ,
        "HOME": str(tmp_path / "home"),
        "SHELLRT_HOME": str(tmp_path / f"state-{name}"),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, str(ws), json.dumps(servers)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return [str(d) for d in result["diagnostics"]], int(result["maxrss_kb"])


@pytest.mark.slow  # 10-25 s in CI: handed out first (tests/conftest.py)
def test_a_server_flooding_stderr_does_not_grow_shellrt(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    _, quiet_kb = _probe(tmp_path, "quiet", _QUIET)
    diagnostics, loud_kb = _probe(tmp_path, "loud", _LOUD)
    assert "LAST-LINE" in " ".join(diagnostics), diagnostics
    growth_mb = (loud_kb - quiet_kb) / 1024
    print(f"ru_maxrss: quiet server {quiet_kb // 1024} MB, loud {loud_kb // 1024} MB")
    assert growth_mb < 64, f"256 MiB of a server's stderr grew shellrt by {growth_mb:.0f} MB"
