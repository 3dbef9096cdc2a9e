"""Red team round 20, docker: a refused start left the image's VOLUMEs on the host's docker disk.

The daemon makes an anonymous volume for each image ``VOLUME`` when the container is created and
fills it with the image's content there. A session's container goes with its volumes
(``AutoRemove``, and ``v=True`` in `_remove`), but the two refusals between create and start (the
daemon dropped ``ReadonlyPaths``; a FIFO or link to one at the image's ``/etc/passwd`` or
``/etc/group``, round 18) removed the container without ``v``: each refused start left one volume
per ``VOLUME``, holding a copy of the image's data (by hand: ``/data/m`` of the image was in the
leaked volume's ``_data``). Every retry of a refused image, by a batch run or an Inspect eval,
wrote that again to ``/var/lib/docker/volumes``, never removed. Both refusals now remove the
volumes with the container. FAIL, not skip, under CI=true.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import anyio
import pytest

from sandbox.docker import DockerBackend
from sandbox.errors import BackendUnavailableError
from tests._docker_support import BUSYBOX, config, policy, require_docker

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

_TAG = "shellrt-rt20-volfifo"
_MARKER = "shellrt-rt20-volume-marker"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _volumes() -> set[str]:
    out = subprocess.run(["docker", "volume", "ls", "-q"], capture_output=True, text=True, timeout=30, check=True)
    return set(out.stdout.split())


def _ours(names: set[str]) -> list[str]:
    """Those of ``names`` that hold the test image's ``/data/m`` (another run's volumes never do)."""
    found = []
    for name in sorted(names):
        info = subprocess.run(["docker", "volume", "inspect", name], capture_output=True, text=True, timeout=30)
        if info.returncode != 0:
            continue
        mark = Path(json.loads(info.stdout)[0]["Mountpoint"]) / "m"
        if mark.is_file() and mark.read_text().strip() == _MARKER:
            found.append(name)
    return found


async def test_a_refused_start_leaves_no_volume(tmp_path: Path) -> None:
    """An image with ``VOLUME /data`` and a FIFO at ``/etc/passwd``: the start is refused and no
    volume holding the image's ``/data`` is left. Failed 1 of 1 before (one such volume)."""
    require_docker()
    subprocess.run(
        ["docker", "build", "-q", "-t", _TAG, "-"],
        input=(
            f"FROM {BUSYBOX}\nRUN mkdir /data && echo {_MARKER} > /data/m && rm -f /etc/passwd && "
            "mkfifo /etc/passwd\nVOLUME /data\n"
        ).encode(),
        capture_output=True,
        check=True,
        timeout=120,
    )
    before = _volumes()
    leaked: list[str] = []
    try:
        with anyio.fail_after(60):
            with pytest.raises(BackendUnavailableError, match="not a regular file"):
                async with DockerBackend(config(_TAG), policy(tmp_path)):
                    pass
        leaked = _ours(_volumes() - before)
        assert leaked == [], leaked
    finally:
        for name in leaked:
            subprocess.run(["docker", "volume", "rm", "-f", name], capture_output=True, timeout=60)
        subprocess.run(["docker", "rmi", "-f", _TAG], capture_output=True, timeout=60)
