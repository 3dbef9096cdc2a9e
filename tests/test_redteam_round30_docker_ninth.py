"""Red team round 30, docker: with every TMPDIR slot held, the next command silently got ``/tmp``.

Round 29 gave each command a ``TMPDIR`` of its own from 8 tmpfs slots; a ninth concurrent command got
``TMPDIR=/tmp``, the session's shared one: eight background tasks that held every slot and filled
``/tmp`` brought round 28's failure back for it (a bash here-document over 64 KiB: "cannot create
temp file"), and its temp files were open to plants. Now there are 16 slots and a command that finds
none free is refused, saying why and what to do, before anything runs: never the shared ``/tmp``.
FAIL, not skip, under CI=true.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from sandbox import SandboxExecError, SandboxProcess
from sandbox.docker import DockerBackend
from sandbox.docker._tmpslots import TMP_SLOTS
from tests._docker_support import DEBIAN, config, policy, require_docker, run_sh, start_sh

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

#: A background task holding its slot: fills /tmp once (the first), then waits to be killed.
_HOLD = '[ "@N" = 0 ] && head -c 2G /dev/zero > /tmp/fill 2>/dev/null; echo "held $TMPDIR"; sleep 60'

#: The command that comes next: its TMPDIR and a 100,000-byte bash here-document written there.
_NEXT = (
    'echo "tmpdir=$TMPDIR"; '
    "bash -c 'cat <<EOF | wc -c\n'\"$(head -c 100000 /dev/zero | tr '\\0' x)\"'\nEOF' 2>&1"
)


async def _hold(backend: DockerBackend, n: int) -> SandboxProcess:
    proc = await start_sh(backend, _HOLD.replace("@N", str(n)))
    line = await proc.stdout.receive()
    assert line.startswith(b"held /.shellrt-tmp/"), line
    return proc


async def test_the_command_after_every_slot_is_held_never_gets_the_shared_tmp(tmp_path: Path) -> None:
    require_docker()
    holders: list[SandboxProcess] = []
    async with DockerBackend(config(DEBIAN), policy(tmp_path)) as backend:
        try:
            with anyio.fail_after(120):
                for n in range(8):
                    holders.append(await _hold(backend, n))
                # The ninth (before: TMPDIR=/tmp, full: "cannot create temp file for here-document").
                rc, out = await run_sh(backend, _NEXT)
                assert rc == 0 and out.startswith("tmpdir=/.shellrt-tmp/") and out.endswith("100001\n"), out
                # Every slot held: refused, saying why and what to do; nothing ran.
                for n in range(8, TMP_SLOTS):
                    holders.append(await _hold(backend, n))
                with pytest.raises(SandboxExecError, match=r"TMPDIR slots.*TaskStop.*Nothing was run"):
                    await run_sh(backend, "touch /tmp/ran; echo ran")
        finally:
            for proc in holders:
                await proc.kill()
                await proc.wait()
        # Freed again: the next command gets a slot; the refused one left nothing.
        rc, out = await run_sh(backend, 'rm -f /tmp/fill; echo "tmpdir=$TMPDIR"; ls /tmp')
        assert rc == 0 and out.startswith("tmpdir=/.shellrt-tmp/") and "ran" not in out, out
