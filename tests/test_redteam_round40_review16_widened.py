"""Red team round 40, review16: a daemon that widens what shellrt did not compare.

Round 40 docker3 compares 15 ``HostConfig`` fields of the created container with the request.
Left out: the mounts shellrt asks for (the I/O directory read-only, the read-denied masks, the
protected read-only binds) and every isolation field shellrt leaves to the daemon's defaults (its
own IPC/PID/UTS namespaces, no device, docker's masked ``/proc`` files such as ``sched_debug``,
which lists the host's every process). A daemon, a docker-compatible API or a socket proxy that
rewrites the request without a warning ran the session with a writable mask, the host's IPC
namespace or the host's process list, silently.

Here the real daemon is given such a rewritten request (shellrt's own stays as it was) and the
real container starts; shellrt must refuse it, naming the field. A real container (FAIL, not skip,
under CI=true).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import docker.api.container
import pytest

from sandbox.docker import DockerBackend
from sandbox.errors import BackendUnavailableError
from tests._docker_support import BUSYBOX, DEBIAN, config, policy, require_docker

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

_REAL = docker.api.container.ContainerApiMixin.create_container


def _rewriting(change: Callable[[dict[str, Any]], None]) -> Any:
    def create(self: Any, *args: Any, **kw: Any) -> Any:
        host = kw.get("host_config")
        if host is not None:
            kw["host_config"] = host = dict(host)  # the daemon's copy; shellrt's request stays
            change(host)
        return _REAL(self, *args, **kw)  # no warning: the daemon says nothing

    return create


def _writable_mounts(host: dict[str, Any]) -> None:
    host["Mounts"] = [{**m, "ReadOnly": False} for m in host.get("Mounts") or []]


def _host_ipc(host: dict[str, Any]) -> None:
    host["IpcMode"] = "host"


def _unmasked(host: dict[str, Any]) -> None:
    host["MaskedPaths"] = []


@pytest.mark.parametrize(
    ("change", "named"),
    [(_writable_mounts, "mount"), (_host_ipc, "IpcMode"), (_unmasked, "MaskedPaths")],
    ids=["read-only-mounts-made-writable", "host-ipc", "masked-paths-dropped"],
)
async def test_a_widened_container_refuses_the_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: Callable[[dict[str, Any]], None], named: str
) -> None:
    require_docker()
    secret = tmp_path / ".env"
    secret.write_text("KEY=1\n")
    monkeypatch.setattr(docker.api.container.ContainerApiMixin, "create_container", _rewriting(change))
    backend = DockerBackend(config(), policy(tmp_path, read_denied=(secret,)))
    with pytest.raises(BackendUnavailableError, match=named):
        async with backend:
            pass


async def test_a_dropped_healthcheck_none_refuses_the_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``Healthcheck: NONE`` dropped: an image's HEALTHCHECK would run as container root with the
    executor's capabilities (round 20's finding), and nothing compared the container's ``Config``."""
    require_docker()

    def create(self: Any, *args: Any, **kw: Any) -> Any:
        kw.pop("healthcheck", None)  # the daemon's copy of the request; the answer says nothing
        return _REAL(self, *args, **kw)

    monkeypatch.setattr(docker.api.container.ContainerApiMixin, "create_container", create)
    with pytest.raises(BackendUnavailableError, match="Healthcheck"):
        async with DockerBackend(config(), policy(tmp_path)):
            pass


@pytest.mark.parametrize(("image", "admin"), [(DEBIAN, False), (BUSYBOX, True)])
async def test_an_unchanged_container_still_starts(tmp_path: Path, image: str, admin: bool) -> None:
    """The daemon here keeps every field: the comparison refuses nothing it should not."""
    require_docker()
    secret = tmp_path / ".env"
    secret.write_text("KEY=1\n")
    cfg = config(image, root_can_administer=admin)
    async with DockerBackend(cfg, policy(tmp_path, read_denied=(secret,))) as backend:
        assert backend.container_id is not None
