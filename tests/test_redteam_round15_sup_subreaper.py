"""Red team, round 15: an owner that is a subreaper does not collect its session's leftovers as zombies.

With a session cgroup (root, a cgroup v1 ``pids`` hierarchy), commands are the owner's own
children and what they leave is re-parented to the nearest subreaper: init, which reaps it,
unless the owner process is a subreaper itself (PID 1 of a container running ``shellrt serve``,
a caller under ``tini -s`` or that set ``PR_SET_CHILD_SUBREAPER``). Then every leftover, killed by
the idle sweep or ended on its own, stayed a zombie of the owner for its whole life (30 zombies
after 20 commands here, still there after close), holding pids until the pid space ran out. Such
an owner now gets the reaper process (`sandbox._reaper`), which reaps what it adopts.

Runs the owner in a child Python (marking the test process a subreaper would collect every
other test's orphans).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

_OWNER = r"""
import anyio, ctypes, os, sys, tempfile
from pathlib import Path
from sandbox import SandboxPolicy
from sandbox.local import LocalBackend
from shellrt.supervisor import Supervisor

assert ctypes.CDLL(None).prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER: as PID 1 would be

def zombies():
    n = 0
    for e in os.listdir("/proc"):
        if e.isdigit():
            try:
                st = open(f"/proc/{e}/stat").read()
            except OSError:
                continue
            f = st[st.rfind(")") + 2:].split()
            n += f[0] == "Z" and int(f[1]) == os.getpid()
    return n

async def main():
    d = Path(tempfile.mkdtemp())
    (d / "ws").mkdir()
    backend = LocalBackend(policy=SandboxPolicy(workspace=d / "ws"))
    backend.session_cgroup = True
    async with backend, Supervisor(backend, session_dir=d / "s") as sup:
        for _ in range(5):
            await sup.run("(setsid env -i sleep 0.05 &) ; (true &) ; exit 0", timeout_s=10)
            await sup.run("(setsid env -i sleep 30 &) ; exit 0", timeout_s=10)
        await anyio.sleep(0.5)
        during = zombies()
    await anyio.sleep(0.3)
    print(during, zombies())

anyio.run(main)
"""


def test_a_subreaper_owner_keeps_no_zombies_of_its_commands_leftovers() -> None:
    if os.geteuid() != 0:
        pytest.skip("the session cgroup (the path that kept zombies) is made for root only")
    done = subprocess.run(
        [sys.executable, "-c", _OWNER],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    during, after = map(int, done.stdout.split()[-2:])
    assert (during, after) == (0, 0), f"zombies of the owner: {during} while open, {after} after close"
