"""Red team round 9, docker: the reaper believed an image's labels.

Every docker start (and ``shellrt sandbox gc``) force-removes, volumes included, each container
labelled ``shellrt.managed=1`` whose ``shellrt.owner-pid`` is dead, then removes the host
directories its ``shellrt.io-dir`` / ``shellrt.host-dir`` labels name. docker gives a container
its image's labels: any container started from an image that carries those labels (the operator
trying a hostile image with ``docker run``, another tool's service) was taken for an orphan of
shellrt's and removed with its anonymous volumes, and the directories its labels named (any
root-owned ``shellrt-docker-*``, e.g. a live session's) were deleted with it. A container is now
shellrt's only when its name (which no image can set) is the one shellrt gives: ``shellrt-`` and
its session label.

Real containers (FAIL, not skip, under CI=true); the image is built locally from busybox and
the test removes only the container it started.
"""

from __future__ import annotations

import secrets
import socket
import subprocess
from pathlib import Path

import pytest

from sandbox.docker._client import connect
from sandbox.docker._gc import reap_orphans
from tests._docker_support import BUSYBOX, build_image, require_docker

pytestmark = [pytest.mark.docker]

IMAGE = "shellrt-test-rt9-labels"
#: Above the kernel's PID_MAX_LIMIT (4194304): no process ever has it, so its owner is "gone".
_DEAD_PID = 4194305


def _build(io_dir: Path) -> None:
    dockerfile = (
        f"FROM {BUSYBOX}\n"
        f'LABEL shellrt.managed="1" shellrt.session="0123456789ab" shellrt.owner-pid="{_DEAD_PID}" '
        f'shellrt.owner-host="{socket.gethostname()}" shellrt.owner-start="1.00" '
        f'shellrt.io-dir="{io_dir}" shellrt.host-dir="{io_dir}"\n'
    )
    build_image(IMAGE, dockerfile)


def test_a_container_wearing_shellrt_labels_from_its_image_is_not_reaped(tmp_path: Path) -> None:
    require_docker()
    victim_dir = tmp_path / "shellrt-docker-victim"
    victim_dir.mkdir()
    (victim_dir / "keep").write_text("a live session's files")
    _build(victim_dir)
    name = f"rt9-labels-{secrets.token_hex(4)}"
    subprocess.run(
        ["docker", "run", "-d", "--name", name, "--network", "none", IMAGE, "sleep", "600"],
        capture_output=True,
        check=True,
        timeout=60,
    )
    try:
        reap_orphans(connect(None), None)
        alive = subprocess.run(["docker", "inspect", name], capture_output=True, timeout=30)
        assert alive.returncode == 0, "shellrt's reaper removed a container it never created"
        assert (victim_dir / "keep").exists(), "the reaper deleted the directory an image's label named"
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, timeout=60)
