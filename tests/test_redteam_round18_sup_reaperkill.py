"""Red team, round 18: a command kills what holds its tree, then detaches.

On the local backend a non-root command can kill its session's reaper (``kill -9 $PPID``, same uid)
and leave a process that outlives the session (round 17, still open: docs/security.md, round 18).
The sandboxes must not share that: in bwrap the command's parent is its pid namespace's init,
which a signal from inside the namespace cannot kill; in docker it is the executor's ``priv``
helper under another uid. Whatever the command then detaches (``setsid``, a cleared environment,
SIGHUP ignored) must be gone once the session closed. Held on both (a regression test, no fix).
FAIL, not skip, under CI=true.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.bwrap import BwrapBackend
from sandbox.docker import DockerBackend
from shellrt.supervisor import Supervisor
from tests._bwrap_session import require_bwrap, supervised
from tests._docker_support import DEBIAN, config, policy, require_docker
from tests.test_server_jsonl import marker_pids

_MARK = "rt18reaperkill"
# Kill every ancestor it may signal (the parent, then the parent's parent ...), then detach.
_HOST_PIDNS = os.readlink("/proc/self/ns/pid")
# Only inside a pid namespace of its own (a broken sandbox must not kill the test's own process).
_ATTACK = (
    f'[ "$(readlink /proc/self/ns/pid)" != "{_HOST_PIDNS}" ] || {{ echo "host pid namespace"; exit 3; }}; '
    'p=$PPID; while [ "$p" -gt 1 ] 2>/dev/null; do kill -9 "$p" 2>/dev/null && echo killed-$p; '
    "p=$(awk '{print $4}' /proc/$p/stat 2>/dev/null || echo 0); done; "
    f"(trap '' HUP TERM; setsid env -i sh -c 'echo up > {_MARK}.up; sleep 37; : {_MARK}' </dev/null >/dev/null 2>&1 &); "
    f"i=0; while [ ! -s {_MARK}.up ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done; "
    f"[ -s {_MARK}.up ] && echo detached"
)


async def _attack(sup: Supervisor) -> str:
    result = await sup.run(_ATTACK, timeout_s=30)
    return result.preview


def _gone_after_close(out: str) -> None:
    assert "detached" in out, f"the detached process never ran: {out}"
    deadline = time.monotonic() + 10
    while marker_pids(_MARK):
        assert time.monotonic() < deadline, (
            f"a detached process outlived the session: {marker_pids(_MARK)} ({out})"
        )
        time.sleep(0.1)


def test_bwrap_session_a_command_cannot_kill_its_holder(tmp_path: Path) -> None:
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()

    async def main() -> str:
        backend = BwrapBackend(BwrapConfig(persistent=True), SandboxPolicy(workspace=ws))
        async with supervised(backend, tmp_path / "session") as sup:
            out = await _attack(sup)
            again = await sup.run("echo still-serving", timeout_s=30)
            assert "still-serving" in again.preview, again.preview
            return out

    _gone_after_close(anyio.run(main))


@pytest.mark.docker
def test_docker_a_command_cannot_kill_its_holder(tmp_path: Path) -> None:
    require_docker()
    ws = tmp_path / "ws"
    ws.mkdir()

    async def main() -> str:
        async with DockerBackend(config(DEBIAN), policy(ws)) as backend:
            sup = Supervisor(backend, session_dir=tmp_path / "session")
            try:
                out = await _attack(sup)
                again = await sup.run("echo still-serving", timeout_s=30)
                assert "still-serving" in again.preview, again.preview
            finally:
                await sup.close()
            return out

    out = anyio.run(main)
    assert "killed-" not in out, f"a command killed a process holding its tree: {out}"
    _gone_after_close(out)
