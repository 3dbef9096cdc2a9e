"""Red team round 28, docker: a command filled the executor's private tmpfs, and no later command's
``cd`` was reported.

``/.shellrt-priv`` (1 MiB, the cwd files) was mode 1733 so that "a command may write the cwd file
made for it"; but writing a file that exists needs no write access to its directory, and 1733 let
every command create files there: one ``head -c 2M /dev/zero > /.shellrt-priv/big`` (ENOSPC at
1 MiB) and every later command's report, its own ``pwd -P`` and the helper's kernel cwd, failed to
be written: the session stayed in its directory for good (round 13 had judged it "its own
session's cost"). The tmpfs is now mode 0711: only the executor creates there. Leased uid and
per-call root (under ``root_can_administer`` the files live in the detached I/O directory). FAIL,
not skip, under CI=true.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest

from sandbox import ExecRequest
from sandbox.docker import DockerBackend
from tests._docker_support import read_to_end, run_sh, shared_backend

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

_FILL = "head -c 2000000 /dev/zero > /.shellrt-priv/big; touch /.shellrt-priv/x && echo created; echo done"
_MOVE = "trap 'pwd -P > \"$SHELLRT_CWD_FILE\"' EXIT; d=/tmp/moved-$(id -u); echo $d; mkdir -p $d && cd $d"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def backend(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[DockerBackend]:
    async for b in shared_backend(tmp_path_factory, "rt28privfill"):
        yield b


@pytest.mark.parametrize("user", [None, "root"])
async def test_a_full_private_tmpfs_does_not_end_cwd_reports(
    backend: DockerBackend, user: str | None
) -> None:
    with anyio.fail_after(60):
        rc, out = await run_sh(backend, _FILL, user=user)
        assert "created" not in out and out.endswith("done\n"), out  # before: created
        proc = await backend.exec(
            ExecRequest(argv=("bash", "-c", _MOVE), cwd="/workspace", report_cwd=True, user=user)
        )
        moved = (await read_to_end(proc.stdout)).decode().strip()
        status = await proc.wait()
    assert status.cwd == moved, (status, moved)  # before: None
