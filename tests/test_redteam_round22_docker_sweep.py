"""Red team round 22, docker: the kill path and the helper's sweep, attacked by a command.

``_kill`` (``executor.sh``) runs in the executor's main loop: while it runs no other request is
read. It used to read the environment of every process of the container it could not place by
session, group or parent (looking for the command's marker), one byte per ``read`` (dash). A
process holding a large environment (one command made 24 of ~1.4 MB; six were enough at load 20)
made every kill of every other command outlast ``KILL_GRACE``: the host then replaced the container (its ``/tmp`` and
background tasks lost). The subreaper helper makes the marker redundant (every orphan of the tree
is handed to it and found by its parent), so the kill reads ``stat`` files only.

A kill names the helper by pid. The host sent one for a command that had already ended
(``TaskStop`` of a finished task, any kill after the exit); once the runner reaped the helper, its
pid may belong to another command's helper (in-container pids wrap at 4,194,304; simulated here by
giving the finished process the other helper's pid), and the kill stopped and killed that
command's whole session. An exit is reported only after the helper swept everything the command
left, so the host now sends no kill once the exit is known.

The helper's sweep (``priv.c``) killed per pass its children and its session's members: a bomb
whose processes each call ``setsid`` was reached one generation per pass while the deeper ones
refilled the pids limit, and the command's exit was never reported. A pass now kills every
descendant it lists, at any depth.

Also tried and held (see docs/security.md, round 22 docker): a command that leaves its session and
group, double-forks, scrubs its environment and keeps replacing itself while the sweep runs leaves
nothing behind, and a bystander command of another user is not touched. FAIL, not skip, under CI=true.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from sandbox.docker import DockerBackend
from sandbox.policy import ResourceLimits
from tests._docker_support import (
    DEBIAN,
    config,
    policy,
    read_to_end,
    require_docker,
    run_sh,
    start_sh,
    uid_processes,
)

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

#: 24 sleepers, each with ~1.4 MB of environment (fourteen 100 kB strings), then "ready".
_BIG_ENV = r"""
big=$(head -c 100000 /dev/zero | tr '\0' a)
set --; for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14; do set -- "$@" "X$i=$big"; done
n=0; while [ $n -lt 24 ]; do env -i "$@" sleep 300 & n=$((n+1)); done
echo ready; wait
"""
#: A tree that leaves its session and group, double-forks, scrubs its environment and keeps
#: replacing itself (each generation starts the next and exits), then the command returns.
_HOPPER = r"""
setsid env -i sh -c '
  hop() { while :; do sh -c "sleep 0.05; exec sleep 300" & sleep 0.02; done; }
  ( ( hop ) & ) ; ( sh -c "kill -STOP \$\$ 2>/dev/null; exec sleep 300" & )
  exec sleep 300' &
( setsid sh -c 'while :; do (sleep 300 &) ; sleep 0.01; done' & )
sleep 0.5; echo started
"""
#: A bomb whose every process leaves its parent's session (setsid) and forks for ever, left
#: running in the background by a command that then ends.
_SETSID_BOMB = (
    "(perl -e 'use POSIX; while (1) { my $p = fork; if (defined $p && $p == 0) { POSIX::setsid() } "
    "elsif (!defined $p) { select(undef, undef, undef, 0.001) } }' &); exec sleep 2"
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _first_line(proc) -> str:  # type: ignore[no-untyped-def]
    out = b""
    with anyio.fail_after(60):
        while b"\n" not in out:
            out += await proc.stdout.receive()
    return out.decode(errors="replace")


async def test_a_kill_does_not_read_what_other_processes_hold(tmp_path: Path) -> None:
    require_docker()
    async with DockerBackend(config(DEBIAN), policy(tmp_path)) as b:
        holder = await start_sh(b, _BIG_ENV, user="daemon")
        assert "ready" in await _first_line(holder)
        target = await start_sh(b, "echo up; exec sleep 300")
        assert "up" in await _first_line(target)
        with anyio.fail_after(120):
            await target.kill()
            await target.wait()
        assert b.recoveries == [], b.recoveries  # the kill finished within KILL_GRACE
        assert await uid_processes(b, "1") >= 25  # the holder and its sleepers were not touched
        await holder.kill()


async def test_a_kill_by_a_stale_pid_hits_no_other_command(tmp_path: Path) -> None:
    require_docker()
    async with DockerBackend(config(DEBIAN), policy(tmp_path)) as b:
        done = await start_sh(b, "echo bye")
        with anyio.fail_after(60):
            await read_to_end(done.stdout)
            await done.wait()
        other = await start_sh(b, "echo up; exec sleep 300", user="daemon")
        assert "up" in await _first_line(other)
        # Its helper was reaped: the same number now names the other command's helper (in-container
        # pids wrap at 4,194,304; the reuse is simulated by giving the finished process that pid).
        done.container_pid = other.container_pid  # type: ignore[attr-defined]
        with anyio.fail_after(60):
            await done.kill()
        assert await uid_processes(b, "1") >= 1, "the other command's sleep was killed by a stale kill"
        await other.kill()


@pytest.mark.parametrize("user", [None, "root"], ids=["leased", "root"])
async def test_a_hopping_escaping_tree_leaves_nothing_and_spares_a_bystander(
    tmp_path: Path, user: str | None
) -> None:
    require_docker()
    async with DockerBackend(config(DEBIAN), policy(tmp_path)) as b:
        bystander = await start_sh(b, "echo up; exec sleep 300", user="daemon")
        assert "up" in await _first_line(bystander)
        uid = "0" if user == "root" else str(b.command_ids[0])
        # The command returns on its own: the helper's sweep ends what it left.
        with anyio.fail_after(60):
            rc, out = await run_sh(b, _HOPPER, user=user)
        assert rc == 0 and "started" in out, out
        left = await uid_processes(b, uid)
        assert left == 0, f"{left} processes of uid {uid} survived the sweep"
        # Killed while it runs (timeout, TaskStop): the executor's kill ends it.
        running = await start_sh(b, _HOPPER.replace("echo started", "echo started; sleep 300"), user=user)
        assert "started" in await _first_line(running)
        assert await uid_processes(b, uid) >= 3, "the tree did not start"
        with anyio.fail_after(120):
            await running.kill()
            await running.wait()
        assert b.recoveries == [], b.recoveries
        left = await uid_processes(b, uid)
        assert left == 0, f"{left} processes of uid {uid} survived the kill"
        assert await uid_processes(b, "1") >= 1, "the bystander was hit"
        await bystander.kill()


async def test_the_sweep_outruns_a_bomb_that_leaves_its_session(tmp_path: Path) -> None:
    """The helper's sweep killed its children and its session's members each pass; a bomb whose
    processes each call setsid was reached one generation per pass (every orphan comes to the
    helper only once its parent died) while the deeper ones refilled the pids limit: the command's
    exit was never reported (290 s). A pass now kills every descendant it lists."""
    require_docker()
    # 256 processes: the old sweep never ended all the same, and the new one is not starved of CPU
    # by thousands of runnable bomb processes (2,048 took it 20-70 s under load).
    async with DockerBackend(config(DEBIAN), policy(tmp_path, limits=ResourceLimits(pids=256))) as b:
        uid = str(b.command_ids[0])
        proc = await start_sh(b, _SETSID_BOMB)
        with anyio.fail_after(90):
            await read_to_end(proc.stdout)
            status = await proc.wait()
        assert status.sandbox_failure is None and b.recoveries == [], (status, b.recoveries)
        assert await uid_processes(b, uid) == 0
