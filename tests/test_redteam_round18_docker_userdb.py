"""Red team round 18, docker: a hostile image's user database hung the daemon's start for ever.

Starting a container makes the docker daemon read the image's ``/etc/passwd`` and ``/etc/group``
itself (for the create's ``user``, numeric ``0:0`` included), by a plain open. An image whose
``/etc/passwd`` is a FIFO blocked it: measured by hand on the tree before, the session's start
never returned (its 60 s ``fail_after`` could not cancel the worker thread; killed at 200 s), the
container stayed ``Created``, and ``docker inspect`` and ``docker rm -f`` of it hung until a
writer opened the FIFO on the host. Not run against the old tree here: it would leave the daemon
stuck. Now the start stats both files in the created container first (`sandbox/docker/_userdb.py`,
nothing is opened) and refuses anything but absent or regular files, links followed.
FAIL, not skip, under CI=true.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import anyio
import pytest

from sandbox.docker import DockerBackend
from sandbox.errors import BackendUnavailableError
from tests._docker_support import BUSYBOX, build_image, config, policy, require_docker

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

_TAG = "shellrt-rt18-userdb-{}"
_SETUPS = {
    "fifo": "rm -f /etc/passwd && mkfifo /etc/passwd",
    "link-to-fifo": "mkfifo /etc/grp.fifo && rm -f /etc/group && ln -s grp.fifo /etc/group",
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.parametrize("kind", sorted(_SETUPS))
async def test_an_image_whose_user_db_is_a_fifo_is_refused(tmp_path: Path, kind: str) -> None:
    require_docker()
    tag = _TAG.format(kind)
    build_image(tag, f"FROM {BUSYBOX}\nRUN {_SETUPS[kind]}\n")
    try:
        with anyio.fail_after(60):  # before: never returned
            with pytest.raises(BackendUnavailableError, match="not a regular file"):
                async with DockerBackend(config(tag), policy(tmp_path)):
                    pass
        left = subprocess.run(
            ["docker", "ps", "-aq", "--filter", f"ancestor={tag}"], capture_output=True, text=True, timeout=30
        )
        assert left.stdout.strip() == "", left.stdout  # the created container went with the refusal
    finally:
        subprocess.run(["docker", "rmi", "-f", tag], capture_output=True, timeout=60)


async def test_a_plain_user_db_still_starts(tmp_path: Path) -> None:
    """The check passes a plain image (and the test images' links, if any) untouched."""
    require_docker()
    async with DockerBackend(config(BUSYBOX), policy(tmp_path)) as b:
        assert b.container_id
