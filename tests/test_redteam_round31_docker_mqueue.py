"""Red team round 31, docker: a command listed another running command's POSIX message queues.

``/dev/mqueue`` is runc's mount of the container's IPC namespace's queue filesystem, 1777 and
root's: a later command listed the names of an earlier one's queues (random, secret until listed)
and then opened them by name, as every command of its uid passes a 0600 queue's check. A
namespace per command needs ``CAP_SYS_ADMIN``, which nothing in the container holds. Now
``/dev/mqueue`` is 1733 and the executor's, set back before every command (a
``root_can_administer`` root, ``CAP_FOWNER``, reopened it): no command without a capability
(leased or per-call root) lists it; each still creates, opens and removes what it names.
FAIL, not skip, under CI=true.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from sandbox.docker import DockerBackend
from tests._docker_support import DEBIAN, config, policy, read_to_end, require_docker, run_sh, start_sh

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

#: The victim: a queue under a random name (mq_open's file in the queue filesystem), kept.
_HOLDER = (
    "n=mq_$(head -c 6 /dev/urandom | od -An -tx1 | tr -d ' \\n'); "
    'umask 077; : > /dev/mqueue/$n && echo "made $n" && sleep 30'
)
#: Another command, by listing: what names it sees, and what it reads through them.
_LISTER = (
    "for f in $(ls -A /dev/mqueue 2>/dev/null; find /dev/mqueue -mindepth 1 2>/dev/null); do "
    'echo "HIT listed $f"; cat "/dev/mqueue/${f##*/}" 2>/dev/null | sed "s/^/HIT read /"; done; '
    # Its own queue, by name: made, read, removed.
    "umask 077; : > /dev/mqueue/own-$$ && grep -q QSIZE /dev/mqueue/own-$$ && rm /dev/mqueue/own-$$ && echo own-ok"
)


async def _listed(backend: DockerBackend, users: tuple[str | None, ...]) -> dict[str | None, str]:
    """What each of ``users`` saw (problems only) while another command held a queue."""
    holder = await start_sh(backend, _HOLDER)
    try:
        made = (await holder.stdout.receive()).decode()
        assert made.startswith("made mq_"), made
        said = {user: await run_sh(backend, _LISTER, user=user) for user in users}
    finally:
        await holder.kill()
        await read_to_end(holder.stdout)
        await holder.wait()
    return {u: out for u, (rc, out) in said.items() if rc != 0 or "HIT" in out or "own-ok" not in out}


async def test_no_command_lists_another_commands_message_queues(tmp_path: Path) -> None:
    require_docker()
    async with DockerBackend(config(DEBIAN), policy(tmp_path)) as backend:
        with anyio.fail_after(60):
            problems = await _listed(backend, (None, "root"))
    assert not problems, problems


async def test_a_root_can_administer_root_does_not_reopen_the_queue_listing(tmp_path: Path) -> None:
    """Such a root holds ``CAP_FOWNER`` and ``CAP_CHOWN``: it made ``/dev/mqueue`` 1777 and root's
    again (and lists it anyway); every later command's helper sets the executor's back first."""
    require_docker()
    async with DockerBackend(config(DEBIAN, root_can_administer=True), policy(tmp_path)) as backend:
        with anyio.fail_after(60):
            rc, out = await run_sh(
                backend, "chmod 1777 /dev/mqueue && chown 0:0 /dev/mqueue && echo reopened", user="root"
            )
            assert rc == 0 and "reopened" in out, out
            problems = await _listed(backend, (None,))
    assert not problems, problems
