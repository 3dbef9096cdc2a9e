"""Red team round 40, review16: a recycled container whose ``/proc`` cover is gone.

Round 40 docker3 covers docker-init's and the executor's ``/proc`` directories once, at the
container's start, and checks them then; a reset redid nothing and checked nothing of it. A cover
that went missing during a task (here the host takes it away in the container's mount namespace,
standing in for whatever did: a host tool, a daemon's remount, a kernel's propagation) was not
noticed, and the recycled container's next task read the executor's counters again: what the
previous task's commands made it do. The reset is the last look before another task: it now checks
the cover (`_procmask.check_masked`) and refuses the container (`ResetError`) when it is not whole.

A real container (FAIL, not skip, under CI=true), as root: recycling needs a root host.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from sandbox.docker import DockerBackend
from sandbox.docker._detach import run_child
from sandbox.docker._hostpid import host_pid
from sandbox.docker._reset import ResetError
from tests._docker_support import DEBIAN, config, policy, require_docker, run_sh
from tests.conftest import require

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

_UNCOVER = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.setns(int(sys.argv[1]), 0x00020000) != 0 or libc.umount2(sys.argv[2].encode(), 2) != 0:
    sys.exit(os.strerror(ctypes.get_errno()))
"""


async def test_a_reset_refuses_a_container_whose_proc_cover_is_gone(tmp_path: Path) -> None:
    require_docker()
    require(os.geteuid() == 0, "recycling needs a root host")
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    async with DockerBackend(config(DEBIAN), policy(first)) as backend:
        await backend.protect_executor()
        executor, cid = backend.executor_pid, backend.container_id
        assert executor is not None and cid is not None
        code, said = await run_sh(backend, f"cat /proc/{executor}/stat >/dev/null 2>&1 || echo covered")
        assert (code, said) == (0, "covered\n"), said
        init = host_pid(cid, 1)
        assert init is not None
        pidfd = os.pidfd_open(init)
        try:  # the host takes the cover away in the container's mount namespace (umount2 MNT_DETACH)
            gone = run_child(_UNCOVER, str(pidfd), f"/proc/{executor}", pass_fds=(pidfd,))
        finally:
            os.close(pidfd)
        assert gone.returncode == 0, gone.stderr
        code, said = await run_sh(backend, f"cat /proc/{executor}/stat >/dev/null 2>&1 && echo read")
        assert said == "read\n", said  # the cover is gone: a task would read it
        with pytest.raises(ResetError, match=f"/proc/{executor}"):
            with anyio.fail_after(60):
                await backend.reset()
        assert backend.reuse_blocker() is not None
