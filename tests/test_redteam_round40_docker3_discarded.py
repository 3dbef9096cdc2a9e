"""Red team round 40, docker3: a daemon that drops a limit shellrt asked for.

dockerd drops some settings rather than refusing the container: on a host without swap
accounting it sets ``MemorySwap`` to -1 ("Memory limited without swap": commands may swap past
their memory limit), without the pids controller it drops ``PidsLimit`` ("PIDs limit discarded": a
fork bomb takes the host's pids), and says so only in the create answer's ``Warnings``, which
shellrt never read: the session ran with less isolation than the policy asked, silently.

Here a real daemon is given the create request such a host's daemon would keep (the fields
dropped on the way, the warnings it would write added), and the real container starts. Now
shellrt compares what the daemon kept (inspect) with what it asked, field by field, and refuses
on any difference or warning, naming it.

A real container (FAIL, not skip, under CI=true).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import docker.api.container
import pytest

from sandbox.docker import DockerBackend
from sandbox.errors import BackendUnavailableError
from sandbox.policy import ResourceLimits
from tests._docker_support import config, policy, require_docker

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

_REAL = docker.api.container.ContainerApiMixin.create_container


def _dropping(drop: dict[str, Any], warning: str) -> Any:
    def create(self: Any, *args: Any, **kw: Any) -> Any:
        host = kw.get("host_config")
        if host is not None:
            kw["host_config"] = host = dict(host)  # the daemon's copy; shellrt's request stays
            for key, value in drop.items():
                if value is None:
                    host.pop(key, None)
                else:
                    host[key] = value
        answer = _REAL(self, *args, **kw)
        answer["Warnings"] = [*(answer.get("Warnings") or []), warning]
        return answer

    return create


@pytest.mark.parametrize(
    ("drop", "warning", "named"),
    [
        (
            {"PidsLimit": None},
            "Your kernel does not support PIDs limit capabilities or the cgroup is not mounted. PIDs limit discarded.",
            "PidsLimit",
        ),
        (
            {"MemorySwap": -1},
            "Your kernel does not support swap limit capabilities or the cgroup is not mounted. "
            "Memory limited without swap.",
            "MemorySwap",
        ),
    ],
)
async def test_a_dropped_limit_refuses_the_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, drop: dict[str, Any], warning: str, named: str
) -> None:
    require_docker()
    monkeypatch.setattr(docker.api.container.ContainerApiMixin, "create_container", _dropping(drop, warning))
    backend = DockerBackend(config(), policy(tmp_path, limits=ResourceLimits(memory_bytes=256 << 20, pids=128)))
    with pytest.raises(BackendUnavailableError, match=named):
        async with backend:
            pass


async def test_a_warning_alone_refuses_the_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A warning about a setting shellrt does not compare (a newer daemon's) still refuses."""
    require_docker()
    monkeypatch.setattr(
        docker.api.container.ContainerApiMixin,
        "create_container",
        _dropping({}, "Your kernel does not support OomKillDisable. OomKillDisable discarded."),
    )
    with pytest.raises(BackendUnavailableError, match="OomKillDisable discarded"):
        async with DockerBackend(config(), policy(tmp_path)):
            pass
