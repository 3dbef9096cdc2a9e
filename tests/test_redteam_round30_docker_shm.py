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

import pytest

from tests._docker_support import listing_probe, unlisted_problems

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

#: The victim: a shared-memory object under a random name (as shm_open makes it), held open.
_HOLDER = (
    "n=psm_$(head -c 6 /dev/urandom | od -An -tx1 | tr -d ' \\n'); "
    'umask 077; echo secret > /dev/shm/$n && exec 3</dev/shm/$n && echo "made $n" && sleep 30'
)
#: Another command: what it lists and reads; its own object by name (made, read, removed).
_LISTER = listing_probe("/dev/shm", 'echo mine > "$o" && cat "$o" && rm "$o"')


async def test_no_command_lists_another_commands_shared_memory(tmp_path: Path) -> None:
    problems = await unlisted_problems(tmp_path, _HOLDER, "made psm_", _LISTER)
    assert not problems, problems


async def test_a_root_can_administer_root_does_not_reopen_the_listing(tmp_path: Path) -> None:
    """Such a root holds ``CAP_FOWNER``: it made ``/dev/shm`` 1777 again (and lists it anyway); every
    later command's helper sets the executor's mode back before the command runs."""
    reopen = "chmod 1777 /dev/shm && chown 0:0 /dev/shm && echo reopened"
    problems = await unlisted_problems(tmp_path, _HOLDER, "made psm_", _LISTER, reopen=reopen)
    assert not problems, problems
