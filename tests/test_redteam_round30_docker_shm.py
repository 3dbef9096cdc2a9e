"""Red team round 30, docker: a command listed another running command's ``/dev/shm`` objects.

``/dev/shm`` is the session's (glibc's ``shm_open`` and ``sem_open`` use that fixed path, no
variable moves them, and a mount per command needs ``CAP_SYS_ADMIN``), and it was 1777: a later
command listed the names of an earlier one's shared memory and semaphores (Python's ``psm_*``,
``sem.mp-*``: random, secret until listed) and then opened them by name, as every command of its
uid passes a 0600 object's check. Now ``/dev/shm`` is 1733 and the executor's: no command (root
included, which holds no capability) lists it; each still creates, opens and removes what it
names. FAIL, not skip, under CI=true.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from sandbox.docker import DockerBackend
from tests._docker_support import DEBIAN, config, policy, read_to_end, require_docker, run_sh, start_sh

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

#: The victim: a shared-memory object under a random name (as shm_open makes it), held open.
_HOLDER = (
    "n=psm_$(head -c 6 /dev/urandom | od -An -tx1 | tr -d ' \\n'); "
    'umask 077; echo secret > /dev/shm/$n && exec 3</dev/shm/$n && echo "made $n" && sleep 30'
)
#: Another command, by listing: what names it sees, and what it reads through them.
_LISTER = (
    "for f in $(ls -A /dev/shm 2>/dev/null; find /dev/shm -mindepth 1 2>/dev/null); do "
    'echo "HIT listed $f"; cat "/dev/shm/${f##*/}" 2>/dev/null | sed "s/^/HIT read /"; done; '
    # Its own object, by name: made, read, removed.
    "umask 077; echo mine > /dev/shm/own-$$ && cat /dev/shm/own-$$ && rm /dev/shm/own-$$ && echo own-ok"
)


async def test_no_command_lists_another_commands_shared_memory(tmp_path: Path) -> None:
    require_docker()
    async with DockerBackend(config(DEBIAN), policy(tmp_path)) as backend:
        with anyio.fail_after(60):
            holder = await start_sh(backend, _HOLDER)
            try:
                made = (await holder.stdout.receive()).decode()
                assert made.startswith("made psm_"), made
                said = {user: await run_sh(backend, _LISTER, user=user) for user in (None, "root")}
            finally:
                await holder.kill()
                await read_to_end(holder.stdout)
                await holder.wait()
    problems = {u: out for u, (rc, out) in said.items() if rc != 0 or "HIT" in out or "own-ok" not in out}
    assert not problems, problems


async def test_a_root_can_administer_root_does_not_reopen_the_listing(tmp_path: Path) -> None:
    """Such a root holds ``CAP_FOWNER``: it made ``/dev/shm`` 1777 again (and lists it anyway); every
    later command's helper sets the executor's mode back before the command runs."""
    require_docker()
    async with DockerBackend(config(DEBIAN, root_can_administer=True), policy(tmp_path)) as backend:
        with anyio.fail_after(60):
            rc, out = await run_sh(
                backend, "chmod 1777 /dev/shm && chown 0:0 /dev/shm && echo reopened", user="root"
            )
            assert rc == 0 and "reopened" in out, out
            holder = await start_sh(backend, _HOLDER)
            try:
                made = (await holder.stdout.receive()).decode()
                assert made.startswith("made psm_"), made
                rc, said = await run_sh(backend, _LISTER)
            finally:
                await holder.kill()
                await read_to_end(holder.stdout)
                await holder.wait()
    assert rc == 0 and "HIT" not in said and "own-ok" in said, said
