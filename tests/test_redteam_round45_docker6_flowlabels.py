"""Red team round 45, docker6: IPv6 flow labels carried a task's data to the next one.

A flow label made with ``IPV6_FLOWLABEL_MGR`` (any uid, no capability; docker's and shellrt's
seccomp filters allow ``setsockopt``) outlives its socket by its linger time, up to 150 s without
``CAP_NET_ADMIN``, and every process of the network namespace lists it in
``/proc/net/ip6_flowlabel``: 20 bits of label and a 128-bit destination of the task's choosing,
up to 2,048 labels (about 300 kbit). It needs no packet, so no counter moves (round 36's check),
and it is no socket (the reset's). A recycled container's next task starts about a second after
its reset: it read every label the last task left.

Now the reset compares every file of the namespace's ``/proc/net`` the host reads before the task
and after it, not just the counters (`_netcounters`), save the host-wide ones that move on their
own; a label left, or any other namespace state, refuses the container (a fresh one for the next
task).

A real container (FAIL, not skip, under CI=true), as root: recycling needs a root host.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from sandbox.docker import DockerBackend, ResetError
from tests._docker_support import config, policy, require_docker, reset_workspaces, run_sh
from tests.conftest import require

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

#: Four labels 0x4A7B0-3, each to 2001:db8::c0de:<n>, lingering 150 s (the unprivileged maximum).
#: struct in6_flowlabel_req: dst[16], label (be32), action, share, flags, expires, linger, pad.
_LEAVE = (
    "perl -e 'for $i (0..3) { socket(my $s, 10, 2, 0) or die \"socket: $!\";"
    ' setsockopt($s, 41, 32, pack("H32 N C C S S S L", "20010db8000000000000000000c0de0$i",'
    ' 0x4A7B0 + $i, 0, 255, 3, 150, 150, 0)) or die "flowlabel: $!"; close $s } print "left\\n"\''
)


async def test_the_next_task_reads_no_flow_label_of_the_last(tmp_path: Path) -> None:
    require_docker()
    require(os.geteuid() == 0, "recycling needs a root host")
    first, second = reset_workspaces(tmp_path)
    async with DockerBackend(config(), policy(first)) as backend:
        await backend.protect_executor()
        code, said = await run_sh(backend, f"{_LEAVE}; cat /proc/net/ip6_flowlabel")
        assert code == 0 and "left" in said and "4A7B0" in said, said
        try:
            with anyio.fail_after(60):
                await backend.reset()
        except ResetError as exc:  # refused: the next task gets a fresh container
            assert "ip6_flowlabel" in str(exc), exc
            return
        await backend.reuse_for(policy(second))
        _, seen = await run_sh(backend, "cat /proc/net/ip6_flowlabel")
    assert "4A7B" not in seen and "c0de" not in seen, f"the next task read the last one's flow labels: {seen!r}"


async def test_an_idle_task_still_recycles(tmp_path: Path) -> None:
    """The wider comparison must not refuse a task that left nothing in the namespace."""
    require_docker()
    require(os.geteuid() == 0, "recycling needs a root host")
    first, second = reset_workspaces(tmp_path)
    async with DockerBackend(config(), policy(first)) as backend:
        await backend.protect_executor()
        code, said = await run_sh(backend, "cat /proc/net/ip6_flowlabel /proc/net/netlink >/dev/null; echo idle")
        assert (code, said) == (0, "idle\n"), said
        with anyio.fail_after(60):
            await backend.reset()
        await backend.reuse_for(policy(second))
        code, said = await run_sh(backend, "cat mine.txt")
    assert (code, said) == (0, "second\n"), said
