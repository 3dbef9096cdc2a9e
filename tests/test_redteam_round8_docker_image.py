"""Red team round 8, docker: what an image's configuration reaches inside the session.

Its environment (``ENV``): docker merges it into the executor's, and ``priv drop`` built each
command's environment from the ``SHELLRT_E<n>`` variables it inherited, so an image's
``SHELLRT_E99=LD_PRELOAD=...`` reached every command beside the host's (and any executor
variable the image named, e.g. ``CWFD``, was preset). Now ``priv exec`` starts the executor
with ``PATH`` alone.

Processes the image asks dockerd to start inside the container:

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
from tests._docker_support import DEBIAN, build_image, config, policy, require_docker

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

HEALTHCHECKED = "shellrt-rt8-healthcheck"
_DOCKERFILE = f"""FROM {DEBIAN}
HEALTHCHECK --interval=1s --timeout=5s --retries=1000 \\
  CMD sh -c 'id -u > /tmp/hc; grep CapEff /proc/self/status >> /tmp/hc; ls /.shellrt-io >> /tmp/hc 2>&1; chmod 644 /tmp/hc'
"""


@pytest.fixture(scope="module")
def healthchecked_image() -> str:
    require_docker()
    build_image(HEALTHCHECKED, _DOCKERFILE)
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


ENVIRONED = "shellrt-rt8-env"
_ENV_DOCKERFILE = f"""FROM {DEBIAN}
ENV SHELLRT_E0=FORGED0=1 SHELLRT_E50=FORGED50=1 SHELLRT_E99=LD_PRELOAD=/rt8-nonexistent.so \\
    BASH_ENV=/etc/rt8 CWFD=9 CWDF=/etc/passwd
"""


@pytest.fixture(scope="module")
def environed_image() -> str:
    require_docker()
    build_image(ENVIRONED, _ENV_DOCKERFILE)
    return ENVIRONED


async def test_an_image_env_never_reaches_commands(tmp_path: Path, environed_image: str) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    backend = DockerBackend(config(environed_image), policy(ws))
    async with backend, Supervisor(backend, session_dir=tmp_path / "session") as sup:
        result = await sup.run("env; echo end", timeout_s=60)
    out = result.preview
    assert result.exit_code == 0 and out.rstrip().endswith("end"), out
    for planted in ("FORGED", "LD_PRELOAD", "rt8-nonexistent", "BASH_ENV", "CWFD", "CWDF"):
        assert planted not in out, f"the image's ENV reached the command: {planted} in {out!r}"


VOLUMED = "shellrt-rt8-volume"
_VOLUME_DOCKERFILE = f"""FROM {DEBIAN}
RUN mkdir -p /data && echo image-content > /data/f && chmod 1777 /data
VOLUME /etc /data
"""


@pytest.fixture(scope="module")
def volumed_image() -> str:
    require_docker()
    build_image(VOLUMED, _VOLUME_DOCKERFILE)
    return VOLUMED


@pytest.mark.parametrize("user", [None, "0:0"], ids=["leased", "root"])
async def test_an_image_volume_is_read_only_to_commands(
    tmp_path: Path, volumed_image: str, user: str | None
) -> None:
    """An image VOLUME was a writable directory on the read-only root: anyone wrote a world-writable
    one, root rewrote the /etc/passwd the runner resolves per-call users from. Its content stays."""
    ws = tmp_path / "ws"
    ws.mkdir()
    kw = {} if user is None else {"user": user}
    backend = DockerBackend(config(volumed_image, **kw), policy(ws))
    async with backend, Supervisor(backend, session_dir=tmp_path / "session") as sup:
        result = await sup.run(
            "cat /data/f; touch /data/planted 2>/dev/null && echo wrote-data;"
            " (echo 'evil:x:0:0::/:/bin/sh' >> /etc/passwd) 2>/dev/null && echo wrote-passwd; id -un",
            timeout_s=60,
        )
    lines = result.preview.split()
    assert lines[0] == "image-content", result.preview
    assert "wrote-data" not in lines and "wrote-passwd" not in lines, result.preview
