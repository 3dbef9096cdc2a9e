"""Red team, round 18: after one command killed the local session's reaper, every later command ran
without one.

The local backend (no session cgroup: a non-root caller, or a root one without a cgroup) starts
each command as the child of the session's reaper, a subreaper that adopts and kills whatever a
command leaves. A command of the caller's own uid can kill it (``kill -9 $PPID``: round 17, still
open for that command). The backend started a reaper only when the session started, so from then
on every command of the session started as the owner's own child: a leftover of any later command
(``setsid env -i …``: no group, no marker) was re-parented to init and outlived the session. A dead
reaper is now replaced before the next command starts (and idle warm shells started under it are
retired). The command that killed it still escapes (docs/security.md, round 18).
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import anyio

from sandbox import SandboxPolicy
from sandbox.local import LocalBackend
from shellrt.supervisor import Supervisor
from tests.test_server_jsonl import marker_pids

_MARK = "rt18reaperdeath"
_LEAVE = f"(setsid env -i sh -c 'sleep 37; : {_MARK}' </dev/null >/dev/null 2>&1 &); echo left"


def test_a_killed_reaper_is_replaced_for_the_next_commands(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()

    async def main() -> list[str]:
        backend = LocalBackend(policy=SandboxPolicy(workspace=ws))
        backend.session_cgroup = False  # the reaper, as a non-root caller gets it
        await backend.start()
        try:
            reaper = backend._runner.reaper
            assert reaper is not None and reaper.alive(), "no reaper started"
            async with Supervisor(backend, session_dir=tmp_path / "s", protect=False) as sup:
                # Never the test's own process (a command the owner started itself has it as parent).
                kill = f'[ "$PPID" != {os.getpid()} ] && kill -9 $PPID && echo killed || echo "parent $PPID"'
                first = await sup.run(kill, timeout_s=20)
                assert "killed" in first.preview, first.preview
                outs = [first.preview]
                for _ in range(3):  # the same shape again: the warm pool's turn too
                    outs.append((await sup.run(_LEAVE, timeout_s=20)).preview)
                return outs
        finally:
            await backend.close()

    try:
        outs = anyio.run(main)
        assert all("left" in out for out in outs[1:]), outs
        deadline = time.monotonic() + 10
        while marker_pids(_MARK):
            assert time.monotonic() < deadline, f"leftovers of later commands outlived the session: {outs}"
            time.sleep(0.1)
    finally:
        for pid in marker_pids(_MARK):  # what a failed run left
            os.kill(pid, signal.SIGKILL)
