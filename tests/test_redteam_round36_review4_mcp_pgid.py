"""Red team round 36 (review4): the stdio transport's group kill reached a recycled process group.

Round 36 mcp made shutdown always ``killpg(server pid)``, also when the server (its group's leader)
had exited long before. asyncio reaps the leader at once; with no member left, its pid is free, and
(pid_max 32768 here) the next process given it that leads a group (``start_new_session``: another
MCP server, a command's sandbox, any job) had its group SIGTERMed, then SIGKILLed, when the session
closed. Reproduced in a private pid namespace, where ``ns_last_pid`` hands the pid out on purpose.
A group whose leader's pid is taken again by a live process is not ours: it is left alone.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = r"""
import os, subprocess, sys, time
import anyio
from shellrt.tools.mcp._stdio import bounded_stdio_client

pid_file = sys.argv[1]

async def main() -> None:
    with open(os.devnull, "w") as errlog:
        async with bounded_stdio_client(
            "/bin/sh", ["-c", f"echo $$ > {pid_file}; exit 0"], env=None, cwd=None, errlog=errlog
        ):
            for _ in range(500):  # the server wrote its pid and exited (reaped by asyncio)
                if os.path.getsize(pid_file) if os.path.exists(pid_file) else 0:
                    pid = int(open(pid_file).read())
                    if not os.path.exists(f"/proc/{pid}"):
                        break
                await anyio.sleep(0.01)
            with open("/proc/sys/kernel/ns_last_pid", "w") as f:
                f.write(str(pid - 1))
            victim = subprocess.Popen(["sleep", "30"], start_new_session=True)
            assert victim.pid == pid, (victim.pid, pid)
    time.sleep(0.3)
    code = victim.poll()
    victim.kill()
    print("VICTIM", code)

anyio.run(main)
"""


def test_the_shutdown_kill_leaves_a_recycled_group_alone(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.fail("needs root (a private pid namespace)")
    script = tmp_path / "probe.py"
    script.write_text(SCRIPT)
    out = subprocess.run(
        ["unshare", "-p", "-f", "--mount-proc", sys.executable, str(script), str(tmp_path / "server.pid")],
        capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": os.getcwd()},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    assert "VICTIM None" in out.stdout, f"another process's group was killed at shutdown: {out.stdout}"
