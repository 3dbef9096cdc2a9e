"""Red team, round 25: a command makes its processes the owner's own children.

A root caller's local session starts each command from a spawner thread of the owner that lives
in the session's cgroup (`sandbox._session_cgroup`), so the command's root shell is the owner's
child. A root that calls ``clone(CLONE_PARENT)`` (``exec python3`` then the raw system call)
gives the new process the root's parent: the owner. Nothing of the owner waits for a process it
did not start, so each such process, once it ended or was killed, stayed the owner's zombie for
the owner's life -- after its command, after the session closed (50 per command here; a long-lived
server collects them until the host's pids run out, and each holds one of the session cgroup's
pids meanwhile). Round 15 closed the same class for an owner that is a subreaper. Now the session
cgroup reaps its spawner thread's children that are no command's root, when a command ends and
when it closes. FAIL, not skip, under CI=true.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from sandbox import LocalConfig, SandboxPolicy
from sandbox.local import LocalBackend
from shellrt.supervisor import Supervisor

# The root itself (exec) clones with CLONE_PARENT | SIGCHLD; each clone notes its pid and ends
# (or, with ``sleep``, runs on); the root ends after.
_CLONES = """exec python3 -c '
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
for i in range(20):
    pid = libc.syscall(56, 0x8000 | 17, 0, 0, 0, 0)
    if pid == 0:
        with open(sys.argv[1], "a") as f:
            f.write("%d\\n" % os.getpid())
        if sys.argv[2] == "sleep":
            time.sleep(60)
        os._exit(0)
time.sleep(0.3)
print("cloned")
' {path} {how}"""


def _our_children(pids: list[int]) -> list[int]:
    """Those of ``pids`` that are still this process's children (a zombie or running)."""
    me = str(os.getpid())
    left = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me:
            left.append(pid)
    return left


@pytest.mark.skipif(os.geteuid() != 0, reason="a session cgroup is a root caller's (else: the reaper reaps)")
def test_clones_of_the_root_do_not_stay_the_owners_zombies(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    ended, running = tmp_path / "ended.txt", tmp_path / "running.txt"

    async def main() -> list[str]:
        backend = LocalBackend(LocalConfig(), SandboxPolicy(workspace=ws))
        await backend.start()
        try:
            assert backend._runner.session_cgroup is not None, "this test needs the session cgroup"
            async with Supervisor(backend, session_dir=tmp_path / "session") as sup:
                out = [(await sup.run(_CLONES.format(path=ended, how="exit"), timeout_s=30)).preview]
                out.append((await sup.run("echo next", timeout_s=30)).preview)
                left = _our_children([int(p) for p in ended.read_text().split()])
                assert not left, f"the owner keeps {len(left)} ended clones as zombies: {left}"
                out.append((await sup.run(_CLONES.format(path=running, how="sleep"), timeout_s=30)).preview)
            return out
        finally:
            await backend.close()

    out = anyio.run(main)
    assert "cloned" in out[0] and "cloned" in out[2], out
    left = _our_children([int(p) for p in running.read_text().split()])
    assert not left, f"after the close the owner still has {len(left)} clones: {left}"
