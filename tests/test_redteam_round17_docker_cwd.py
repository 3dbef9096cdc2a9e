"""Red team round 17, docker: the working directory a command chose led the runner into shellrt's own
directories.

The cwd of a request is data a command controls: the session adopts the cwd a command reports
(``$SHELLRT_CWD_FILE``), and an agent passes back what it saw. The executor's runner entered it
with ``cd``, as the executor's identity, following links a command itself cannot follow, and the
command inherited that directory. Under ``root_can_administer`` the I/O directory is detached
from the container and reached only as the runner's ``/proc/self/fd/8``: a workspace link to
that path took a root command (``CHOWN``, ``DAC_OVERRIDE``, ``FOWNER``) into it, where it listed
and read the other commands' request files (argv, environment) and FIFOs, on a writable mount
(the runner sources ``<id>.req``). A link to ``/.shellrt-io`` or ``/.shellrt-priv`` did the same
elsewhere (no mode bypass there, but a cwd in the executor's directory).

Fixed in the runner (`sandbox/docker/executor.sh`): after ``cd`` it takes the physical directory
(``cd -P .``, getcwd) and refuses one that no path reaches (a detached or deleted directory), one
under ``/proc``, the I/O directory or the executor's private one, and one that is the same inode
as either (``-ef``): ``cwd-denied``, nothing run. Since round 26 a link elsewhere is refused too
(``cwd-link``: the runner enters exactly the path sent).
FAIL, not skip, under CI=true.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox.docker import DockerBackend
from sandbox.errors import SandboxExecError
from tests._docker_support import BUSYBOX, config, policy, require_docker, run_sh
from tests.conftest import require

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

_LOOK = "pwd; ls -a; cat *.req 2>/dev/null | head -3"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _refused(backend: DockerBackend, cwd: str, user: str | None) -> None:
    try:
        rc, out = await _in(backend, cwd, user)
    except SandboxExecError as exc:
        assert "cannot be entered" in str(exc), exc
        return
    pytest.fail(f"ran in {cwd}: rc={rc} {out!r}")


async def _in(backend: DockerBackend, cwd: str, user: str | None) -> tuple[int | None, str]:
    from sandbox import ExecRequest
    from tests._docker_support import read_to_end

    proc = await backend.exec(
        ExecRequest(
            argv=("sh", "-c", _LOOK), cwd=cwd, env={"PATH": "/bin:/usr/bin"}, merge_stderr=True, user=user
        )
    )
    out = await read_to_end(proc.stdout)
    return (await proc.wait()).exit_code, out.decode(errors="replace")


async def test_an_admin_root_cannot_enter_the_detached_io_directory(tmp_path: Path) -> None:
    """Before: ``ls`` showed ``executor.sh``, ``priv`` and the running command's ``.req``."""
    require_docker()
    import os

    require(os.geteuid() == 0, "root_can_administer needs a root host")
    async with DockerBackend(config(BUSYBOX, root_can_administer=True), policy(tmp_path)) as b:
        rc, out = await run_sh(
            b,
            "ln -s /proc/self/fd/8 io8 && ln -s /proc/self/root/proc/self/fd/8 io8b && echo ok",
            user="root",
        )
        assert out.strip() == "ok", out
        await _refused(b, "/workspace/io8", "root")
        await _refused(b, "/workspace/io8b", "root")  # the same, reached another way
        rc, out = await run_sh(b, "ls /workspace")  # the session still serves
        assert rc == 0 and "io8" in out, out


async def test_links_to_the_executors_directories_are_refused(tmp_path: Path) -> None:
    require_docker()
    async with DockerBackend(config(BUSYBOX), policy(tmp_path)) as b:
        rc, out = await run_sh(
            b, "ln -s /.shellrt-io io && ln -s /.shellrt-priv pv && mkdir real && ln -s real alias && echo ok"
        )
        assert out.strip() == "ok", out
        await _refused(b, "/workspace/io", None)
        await _refused(b, "/workspace/pv", None)
        # Since round 26 no link on the way is followed (one may be swapped in after the host's check):
        # refused too, the physical path runs.
        await _refused(b, "/workspace/alias", None)
        rc, out = await _in(b, "/workspace/real", None)
        assert rc == 0 and out.splitlines()[0] == "/workspace/real", out
