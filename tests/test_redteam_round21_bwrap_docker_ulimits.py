"""Red team round 21 (bwrap area, docker's side of per-uid budgets): a container's rlimit shares.

Containers share the host's user namespace here (no userns-remap), so the kernel charges a
command's POSIX message queue bytes and queued signals to its host uid, checked against the
container's rlimits -- the daemon's own (819200 bytes, 96362 signals: all of a uid's budget). A
command run as ``user="root"`` could hold all of host root's queues and signals. Every container
now gets half of each (`sandbox._ucounts.session_rlimits`, as a non-root caller's bwrap sandboxes
do), soft and hard, for every user a command runs as. FAIL, not skip, under CI=true.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from sandbox._ucounts import session_rlimits
from sandbox.docker import DockerBackend
from tests._docker_support import BUSYBOX, config, policy, require_docker, run_sh

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

_ROWS = {"msgqueue": "Max msgqueue size", "sigpending": "Max pending signals"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_root_command_gets_only_the_rlimit_shares(tmp_path: Path) -> None:
    """Failed 1 of 1 before: the root command's limits were 819200 bytes and 96362 signals."""
    require_docker()
    shares = {name: value for name, _res, value in session_rlimits()}
    assert set(shares) == set(_ROWS), shares
    async with DockerBackend(config(BUSYBOX), policy(tmp_path)) as b:
        with anyio.fail_after(30):
            rc, out = await run_sh(b, "cat /proc/self/limits", user="root")
    assert rc == 0, out
    wrong = []
    for name, row in _ROWS.items():
        line = next(line for line in out.splitlines() if line.startswith(row))
        soft, hard = (int(v) for v in line[len(row) :].split()[:2])
        if soft > shares[name] or hard > shares[name]:
            wrong.append(f"{row}: {soft} soft, {hard} hard (share {shares[name]})")
    assert not wrong, "; ".join(wrong)
