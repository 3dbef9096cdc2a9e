"""Red team round 32, docker: a command filled the executor's private tmpfs through its own cwd
file, and later commands were refused with a false "every TMPDIR slot is held".

Round 28 made ``/.shellrt-priv`` 0711 so no command creates files there; but the cwd file made for
each command (0666, named by ``$SHELLRT_CWD_FILE``) lives on that same 1 MiB tmpfs, beside the
TMPDIR slots' locks and the helpers' kernel-cwd files. ``head -c 2M /dev/zero >
"$SHELLRT_CWD_FILE"`` in a background task filled it: the next runner's ``echo $id > slot.N``
created each lock and failed to write it (ENOSPC), leaving all 16 locks empty, held by nobody, so
that command and every later one got ``E tmp-busy`` until the reset, and no concurrent ``cd`` was
reported. Leased uid and per-call root. FAIL, not skip, under CI=true.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest

from sandbox import ExecRequest
from sandbox.docker import DockerBackend
from tests._docker_support import read_to_end, run_sh, shared_backend
from tests.test_redteam_round28_docker_privfill import _MOVE

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

_FILL = 'head -c 2000000 /dev/zero 2>/dev/null > "$SHELLRT_CWD_FILE"; echo filled; exec sleep 30'


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def backend(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[DockerBackend]:
    async for b in shared_backend(tmp_path_factory, "rt32cwdfill"):
        yield b


async def _moved(backend: DockerBackend, user: str | None) -> tuple[str | None, str]:
    proc = await backend.exec(
        ExecRequest(argv=("bash", "-c", _MOVE), cwd="/workspace", report_cwd=True, user=user)
    )
    moved = (await read_to_end(proc.stdout)).decode().strip()
    return (await proc.wait()).cwd, moved


@pytest.mark.parametrize("user", [None, "root"])
async def test_a_command_filling_its_cwd_file_leaves_others_their_slots_and_cwd(
    backend: DockerBackend, user: str | None
) -> None:
    with anyio.fail_after(60):
        filler = await backend.exec(
            ExecRequest(
                argv=("sh", "-c", _FILL),
                cwd="/workspace",
                env={"PATH": "/usr/bin:/bin"},
                merge_stderr=True,
                report_cwd=True,
                user=user,
            )
        )
        try:
            said = (await filler.stdout.receive()).decode()
            assert "filled" in said, said
            rc, out = await run_sh(backend, "echo beside", user=user)
            assert (rc, out) == (0, "beside\n"), (rc, out)  # before: SandboxExecError, tmp-busy
            cwd, moved = await _moved(backend, user)
            assert cwd == moved, (cwd, moved)  # before: (never reached)
        finally:
            await filler.kill()
            await read_to_end(filler.stdout)
            await filler.wait()
        # Once it ended: the slots are all free again (two commands at once).
        holder = await backend.exec(
            ExecRequest(
                argv=("sh", "-c", "echo up; exec sleep 5"), cwd="/workspace", env={"PATH": "/usr/bin:/bin"}
            )
        )
        try:
            assert (await holder.stdout.receive()) == b"up\n"
            rc, out = await run_sh(backend, "echo after", user=user)
            assert (rc, out) == (0, "after\n"), (rc, out)
        finally:
            await holder.kill()
            await read_to_end(holder.stdout)
            await holder.wait()
