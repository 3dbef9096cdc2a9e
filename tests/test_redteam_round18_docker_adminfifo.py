"""Red team round 18, docker: a FIFO at ``/etc/passwd`` stalled every later named per-call user.

With ``root_can_administer`` the image's root is writable to a root command. The executor's runner
resolves a per-call user by name from ``/etc/passwd`` and ``/etc/group`` and checked the type on
the opened descriptor (round 11: a link to the channel is refused), but a FIFO blocked the open
itself: measured before, a later ``user="nobody"`` waited until the host gave up after 30 s ("the
executor did not start 'id' within 30s", blaming the pids limit) and its runner stayed blocked for
the session's life, once per call. Now, where the root is writable, the runner opens the files
read-write, which never blocks on a FIFO, and the regular-file check refuses it at once
(``user-db``). FAIL, not skip, under CI=true.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from sandbox.docker import DockerBackend
from sandbox.errors import SandboxExecError
from tests._docker_support import DEBIAN, config, policy, require_docker, run_sh

pytestmark = [pytest.mark.anyio, pytest.mark.docker]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_fifo_user_db_is_refused_at_once(tmp_path: Path) -> None:
    """Before: 30 s and a misleading error (failed 1 of 1, by its 20 s bound)."""
    require_docker()
    async with DockerBackend(config(DEBIAN, root_can_administer=True), policy(tmp_path)) as b:
        rc, out = await run_sh(
            b, "rm -f /etc/passwd && mkfifo -m 666 /etc/passwd && echo planted", user="root"
        )
        assert rc == 0 and out.strip() == "planted", out
        with anyio.fail_after(20):  # generous: the refusal takes milliseconds
            with pytest.raises(SandboxExecError, match="not a regular file"):
                await run_sh(b, "id", user="nobody")
            rc, out = await run_sh(b, "echo next")  # the session's own user is never looked up
        assert rc == 0 and out.strip() == "next", out
