"""Red team round 14, docker: a crash fed the host's ``core_pattern`` pipe handler.

Docker commands ran with ``RLIMIT_CORE`` 0:0 (`sandbox/docker/priv.c`). The kernel ignores the
core limit for a ``core_pattern`` pipe (fs/coredump.c) except at exactly 1, its mark of a
recursive dump: at 0 every crash in a container started the host's handler (apport,
systemd-coredump) as root on the host. Commands now start at 1:1, which the seccomp filter
(shared with bwrap) keeps them from changing; the bwrap side is tested in
``tests/test_redteam_round14_bwrap_kernel.py``. FAIL, not skip, under CI=true.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox.docker import DockerBackend
from tests._docker_support import config, policy, require_docker, run_argv

pytestmark = [pytest.mark.anyio, pytest.mark.docker]


async def test_a_docker_command_starts_at_core_limit_one_byte_and_cannot_change_it(tmp_path: Path) -> None:
    require_docker()
    ws = tmp_path / "ws"
    ws.mkdir()
    async with DockerBackend(config(), policy(ws)) as backend:
        limits = await run_argv(backend, "grep", "core file", "/proc/self/limits")
        assert limits.split()[4:6] == ["1", "1"], limits
        lowered = await run_argv(backend, "sh", "-c", "ulimit -S -c 0 2>&1 && echo lowered; ulimit -H -c 0 2>&1 && echo hard")
        assert "lowered" not in lowered and "hard" not in lowered, lowered
