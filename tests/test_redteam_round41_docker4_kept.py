"""Red team round 41, docker4: isolation fields a daemon or proxy could still widen silently.

Round 40 (docker3, review16) compares the created container with the request for the fields
shellrt sets and the namespace/device fields it leaves to docker's private default. Left out:
``Runtime`` (a daemon's ``default-runtime`` or a proxy's rewrite: shellrt's pidfd joins, its
host-side ``/proc`` reads and ``priv.c`` all assume runc), ``CgroupnsMode`` (``host`` on a cgroup v2
host shows commands every host cgroup's counters; it is docker 20.10's default on v1) and
``OomScoreAdj`` (a container at -1000 lets its commands lower their own score to it: the host's
OOM killer then takes the host's processes, never theirs), and ``Cgroup`` (another container's).

The real daemon is given the rewritten request (shellrt's own stays as it was) and the real
container starts; shellrt must refuse it, naming the field. A real container (FAIL, not skip,
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
from tests._docker_support import config, policy, require_docker, run_argv

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


def _other_runtime(host: dict[str, Any]) -> None:
    # A runtime registered on every docker 20.10 (the test needs one the daemon runs); it stands
    # for a daemon's default-runtime or a proxy's choice (nvidia's adds host devices, a custom one anything).
    host["Runtime"] = "io.containerd.runc.v2"


def _host_cgroupns(host: dict[str, Any]) -> None:
    host["CgroupnsMode"] = "host"


def _unkillable(host: dict[str, Any]) -> None:
    host["OomScoreAdj"] = -1000


@pytest.mark.parametrize(
    ("change", "named"),
    [(_other_runtime, "Runtime"), (_host_cgroupns, "CgroupnsMode"), (_unkillable, "OomScoreAdj")],
    ids=["runtime", "host-cgroupns", "oom-score-adj"],
)
async def test_a_widened_container_refuses_the_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: Callable[[dict[str, Any]], None], named: str
) -> None:
    require_docker()
    monkeypatch.setattr(docker.api.container.ContainerApiMixin, "create_container", _rewriting(change))
    with pytest.raises(BackendUnavailableError, match=named):
        async with DockerBackend(config(), policy(tmp_path)):
            pass


async def test_the_session_asks_for_runc_and_a_private_cgroup_namespace(tmp_path: Path) -> None:
    """What the fix asks for is what runs: commands see their own cgroup as ``/``, not the host's path."""
    require_docker()
    async with DockerBackend(config(), policy(tmp_path)) as backend:
        out = await run_argv(backend, "cat", "/proc/self/cgroup")
    assert "memory:/" in out, out
    assert "/docker/" not in out and backend.container_id not in out, out
