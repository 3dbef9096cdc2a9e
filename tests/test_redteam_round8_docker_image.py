"""Red team round 8, docker: processes the image asks dockerd to start inside the container.

An image's ``HEALTHCHECK`` is run by dockerd as a ``docker exec`` in the session's
container, every interval, as container root with the container's capability set (the
executor's: DAC_OVERRIDE, SYS_PTRACE, KILL, SETUID, ...), not through ``priv drop``: outside
the identity split that keeps commands from the I/O directory and the executor. Its working
directory is the workspace, which commands write (a ``python3 -c`` healthcheck imports from
there). Now the container is created with the healthcheck disabled (``NONE``). Real containers
(FAIL, not skip, under CI=true); the test image is built locally from the debian test image.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from sandbox.docker import DockerBackend
from shellrt.supervisor import Supervisor
from tests._docker_support import DEBIAN, config, policy, require_docker

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

HEALTHCHECKED = "shellrt-rt8-healthcheck"
_DOCKERFILE = f"""FROM {DEBIAN}
HEALTHCHECK --interval=1s --timeout=5s --retries=1000 \\
  CMD sh -c 'id -u > /tmp/hc; grep CapEff /proc/self/status >> /tmp/hc; ls /.shellrt-io >> /tmp/hc 2>&1; chmod 644 /tmp/hc'
"""


@pytest.fixture(scope="module")
def healthchecked_image() -> str:
    require_docker()
    subprocess.run(
        ["docker", "build", "-q", "-t", HEALTHCHECKED, "-"],
        input=_DOCKERFILE.encode(),
        capture_output=True,
        check=True,
        timeout=120,
    )
    return HEALTHCHECKED


async def test_an_image_healthcheck_never_runs_in_the_session(
    tmp_path: Path, healthchecked_image: str
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    backend = DockerBackend(config(healthchecked_image), policy(ws))
    async with backend, Supervisor(backend, session_dir=tmp_path / "session") as sup:
        result = await sup.run("sleep 4; cat /tmp/hc 2>/dev/null || echo no-healthcheck", timeout_s=60)
        assert result.preview.strip() == "no-healthcheck", (
            f"the image's healthcheck ran in the container as root with capabilities: {result.preview!r}"
        )
        assert backend.container_id is not None
        test = subprocess.run(
            ["docker", "inspect", "-f", "{{json .Config.Healthcheck.Test}}", backend.container_id],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout.strip()
        assert test == '["NONE"]', test
