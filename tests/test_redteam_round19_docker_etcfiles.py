"""Red team round 19, docker: the files docker itself mounts into ``/etc``, and its log (held).

docker bind-mounts ``/etc/hosts``, ``/etc/resolv.conf`` and ``/etc/hostname`` from the host's
``/var/lib/docker/containers/<id>/`` into every container. Round 18 left them as writable to a
root command (a per-call ``user="root"``, ``user: "0:0"``) under an image ``VOLUME /etc``; had
they been, a root command would have poisoned name resolution for every later command of its
session (any user) and written without bound into the host's docker directory. Measured: the
daemon mounts them read-only whenever the root filesystem is (moby's network mounts are
``Writable: !ReadonlyRootfs``; mountinfo ``ro`` for all three), which shellrt asks for unless
``root_can_administer``, also under ``VOLUME /etc``. These tests passed before and after: they
guard that, the ``root_can_administer`` exception (writable, by design) and the log driver
``none`` (nothing a command or PID 1 writes is kept by the daemon). FAIL, not skip, under CI=true.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import anyio
import pytest

from sandbox.docker import DockerBackend
from tests._docker_support import DEBIAN, build_image, config, policy, require_docker, run_sh
from tests.test_redteam_round8_docker_image import _VOLUME_DOCKERFILE, VOLUMED

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

_BOUND = 30.0
_FILES = ("/etc/hosts", "/etc/resolv.conf", "/etc/hostname")
_TAMPER = "; ".join(f"echo '10.6.6.6 pypi.org' >> {f}" for f in _FILES) + "; true"
_VIEW = "cat " + " ".join(_FILES)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _host_paths(cid: str) -> list[str]:
    out = subprocess.run(["docker", "inspect", cid], capture_output=True, text=True, timeout=30, check=True)
    info = json.loads(out.stdout)[0]
    return [str(info[k]) for k in ("HostsPath", "ResolvConfPath", "HostnamePath")]


async def _sh(backend: DockerBackend, command: str, user: str | None = None) -> tuple[int | None, str]:
    with anyio.fail_after(_BOUND):
        return await run_sh(backend, command, user=user)


@pytest.mark.parametrize("image", [DEBIAN, VOLUMED], ids=["plain", "volume-etc"])
async def test_a_root_command_cannot_rewrite_docker_etc_files(tmp_path: Path, image: str) -> None:
    """All three appends and the ``dd`` are refused; another user's later command reads the originals."""
    require_docker()
    if image == VOLUMED:
        build_image(VOLUMED, _VOLUME_DOCKERFILE)
    async with DockerBackend(config(image), policy(tmp_path)) as b:
        assert b.container_id is not None
        host = _host_paths(b.container_id)
        sizes = [Path(p).stat().st_size for p in host if Path(p).is_file()]
        rc, before = await _sh(b, _VIEW)
        assert rc == 0 and before, before
        rc, out = await _sh(b, _TAMPER, user="root")
        assert out.count("Read-only file system") == 3, out
        rc, out = await _sh(b, "dd if=/dev/zero of=/etc/hosts bs=64k count=16 2>&1; true", user="root")
        assert "Read-only file system" in out, out
        rc, after = await _sh(b, _VIEW)
        assert rc == 0 and after == before and "10.6.6.6" not in after, (before, after)
        assert [Path(p).stat().st_size for p in host if Path(p).is_file()] == sizes


async def test_with_root_can_administer_they_stay_writable(tmp_path: Path) -> None:
    """The exception: an administering root edits ``/etc/hosts`` as on any machine of its own."""
    require_docker()
    async with DockerBackend(config(DEBIAN, root_can_administer=True), policy(tmp_path)) as b:
        rc, out = await _sh(b, "echo '10.6.6.7 admin.test' >> /etc/hosts && grep -c admin.test /etc/hosts", "root")
    assert rc == 0 and out.split() == ["1"], out


async def test_nothing_reaches_a_docker_log(tmp_path: Path) -> None:
    """Held (item 5): the container has no log driver (``none``): nothing PID 1 or a command writes is
    kept on the host's disk by the daemon (``docker logs`` has nothing to read)."""
    require_docker()
    async with DockerBackend(config(DEBIAN), policy(tmp_path)) as b:
        assert b.container_id is not None
        rc, out = await _sh(b, "echo to-stdout; echo to-stderr >&2; echo pid1 > /proc/1/fd/1; true", "root")
        assert "to-stdout" in out, out
        info = subprocess.run(
            ["docker", "inspect", b.container_id], capture_output=True, text=True, timeout=30, check=True
        )
        data = json.loads(info.stdout)[0]
        assert data["HostConfig"]["LogConfig"]["Type"] == "none", data["HostConfig"]["LogConfig"]
        assert not data.get("LogPath"), data.get("LogPath")
        logs = subprocess.run(["docker", "logs", b.container_id], capture_output=True, text=True, timeout=30)
        assert "to-stdout" not in logs.stdout + logs.stderr and "pid1" not in logs.stdout + logs.stderr
