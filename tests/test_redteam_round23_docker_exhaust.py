"""Red team round 23, docker: a command that exhausts the container's resources attacks the executor.

The executor is a shell (dash, busybox ash): a failed fork ends a non-interactive one ("Cannot
fork"). A command that keeps the pids limit full made the next request end the executor: the host
saw it gone and replaced the container, the session's ``/tmp`` and background tasks lost (round 22,
found by hand). Every fork the executor and its runners make is now retried through
``command eval`` (an error there is a status, not the shell's end) and, when no pid frees up in
time, the request is refused with a clear reason while the executor lives on.

The kill path (``_kill``) swept the command's tree itself, in dash, one ``read`` per byte of every
``stat`` file: against a bomb of 2,048 processes that each leave their session it outlasted the
host's ``KILL_GRACE`` and the container was replaced (round 22 "Left"). The kill now asks the
command's helper (``priv``, a subreaper, the executor's uid) with SIGUSR1 to kill the command and
sweep with the same C pass (one read of ``/proc``, pidfds) it runs after every exit.
FAIL, not skip, under CI=true.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from sandbox.docker import DockerBackend
from sandbox.errors import SandboxExecError
from sandbox.policy import ResourceLimits
from tests._docker_support import DEBIAN, config, policy, require_docker, run_sh, start_sh, uid_processes

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

#: Fills the pids limit with sleepers and keeps it full (retrying every 10 ms); says "full" once.
_HOLD = (
    "perl -e '$|=1; my $told; while (1) { my $p = fork; if (defined $p && $p == 0) { sleep 300; exit } "
    'elsif (!defined $p) { print "full\\n" unless $told++; select(undef, undef, undef, 0.01) } }\''
)
#: A bomb whose every process leaves its parent's session and forks for ever, spinning (no pause)
#: when the pids limit refuses it; the first to be refused says "full".
_SETSID_BOMB = (
    "perl -e 'use POSIX; $|=1; while (1) { my $p = fork; if (defined $p && $p == 0) { POSIX::setsid() } "
    'elsif (!defined $p) { print "full\\n" if mkdir "/tmp/.full" } }\''
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _until(proc, word: str) -> None:  # type: ignore[no-untyped-def]
    out = b""
    with anyio.fail_after(120):
        while word.encode() not in out:
            out += await proc.stdout.receive()


async def test_a_request_at_the_pids_limit_leaves_the_executor_alive(tmp_path: Path) -> None:
    require_docker()
    async with DockerBackend(config(DEBIAN), policy(tmp_path, limits=ResourceLimits(pids=48))) as b:
        rc, out = await run_sh(b, "echo kept > /tmp/mark")
        assert rc == 0, out
        # Commands run at nice 19 for good (the kill's sweep runs at -20): no way back down.
        rc, out = await run_sh(
            b, "nice; renice -n 0 -p $$ >/dev/null 2>&1 && echo LOWERED; nice", user="root"
        )
        assert out.split() == ["19", "19"], out
        holder = await start_sh(b, _HOLD)
        await _until(holder, "full")
        refused = 0
        for _ in range(3):  # each request forks in the executor's main loop, then in its runner
            try:
                with anyio.fail_after(60):
                    await run_sh(b, "true")
            except SandboxExecError as exc:
                assert "pids limit" in str(exc) and "Nothing was run" in str(exc), exc
                refused += 1
        assert b.recoveries == [], f"the executor died at the pids limit: {b.recoveries}"
        assert refused >= 1, "no request met the full pids limit"
        with anyio.fail_after(60):
            await holder.kill()
            await holder.wait()
        rc, out = await run_sh(b, "cat /tmp/mark")
        assert (rc, out.strip()) == (0, "kept") and b.recoveries == [], (rc, out, b.recoveries)


async def test_a_kill_ends_a_2048_process_setsid_bomb_within_the_grace(tmp_path: Path) -> None:
    require_docker()
    async with DockerBackend(config(DEBIAN), policy(tmp_path)) as b:  # the default 2,048 pids
        bystander = await start_sh(b, "echo up; exec sleep 300", user="daemon")
        await _until(bystander, "up")
        uid = str(b.command_ids[0])
        bomb = await start_sh(b, _SETSID_BOMB)
        await _until(bomb, "full")
        with anyio.fail_after(120):
            await bomb.kill()
            status = await bomb.wait()
        assert b.recoveries == [], f"the kill outlasted KILL_GRACE: {b.recoveries}"
        assert status.exit_code != 0, status
        left = await uid_processes(b, uid)
        assert left == 0, f"{left} processes of the bomb survived the kill"
        assert await uid_processes(b, "1") >= 1, "the bystander was hit"
        await bystander.kill()
