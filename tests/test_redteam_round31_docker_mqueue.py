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

import pytest

from tests._docker_support import listing_probe, unlisted_problems

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

#: The victim: a queue under a random name (mq_open's file in the queue filesystem), kept.
_HOLDER = (
    "n=mq_$(head -c 6 /dev/urandom | od -An -tx1 | tr -d ' \\n'); "
    'umask 077; : > /dev/mqueue/$n && echo "made $n" && sleep 30'
)
#: Another command: what it lists and reads; its own queue by name (made, read, removed).
_LISTER = listing_probe("/dev/mqueue", ': > "$o" && grep -q QSIZE "$o" && rm "$o"')


async def test_no_command_lists_another_commands_message_queues(tmp_path: Path) -> None:
    problems = await unlisted_problems(tmp_path, _HOLDER, "made mq_", _LISTER)
    assert not problems, problems


async def test_a_root_can_administer_root_does_not_reopen_the_queue_listing(tmp_path: Path) -> None:
    """Such a root holds ``CAP_FOWNER`` and ``CAP_CHOWN``: it made ``/dev/mqueue`` 1777 and root's
    again (and lists it anyway); every later command's helper sets the executor's back first."""
    reopen = "chmod 1777 /dev/mqueue && chown 0:0 /dev/mqueue && echo reopened"
    problems = await unlisted_problems(tmp_path, _HOLDER, "made mq_", _LISTER, reopen=reopen)
    assert not problems, problems
