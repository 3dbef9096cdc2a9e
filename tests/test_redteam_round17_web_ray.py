"""Red team round 17 (web): a Ray task with the host's network reaches the cluster's control plane.

A task with ``network: host`` (or docker's ``bridge``) on a Ray node shares the node's network
(or reaches it from the docker bridge): the GCS, the raylet, the dashboard's job API and the
client port listen there, and a task that reaches them (with the cluster's token where one is
asked) runs code on every node. ``--allow-task-network`` said "unfiltered network", not "the
cluster's control plane". The node actor now refuses such a task (status ``error``) before any
sandbox starts; only a task the operator chose to run without a sandbox (``--allow-task-local``)
gets the node's network, and the driver says so loudly.

The actor is the real `ShellrtNodeActor` class run in this process (no cluster needed for the
decision it makes) with real bwrap; a TCP listener on 127.0.0.1 stands for the GCS.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests._tcp_server import recording_server
from tests.conftest import require

pytestmark = [pytest.mark.ray, pytest.mark.bwrap, pytest.mark.timeout(60)]

try:
    import ray

    HAVE_RAY = True
except ImportError:  # pragma: no cover - depends on the extra
    HAVE_RAY = False


@pytest.fixture
def control_plane() -> Iterator[tuple[int, list[bytes]]]:
    """A listener on the node's loopback standing for the GCS: records each connection's bytes."""
    with recording_server() as served:
        yield served


def _actor(tmp_path: Path) -> Any:
    from shellrt.batch.ray_runner import ShellrtNodeActor

    (tmp_path / "art").mkdir()
    (tmp_path / "s").mkdir()
    return ShellrtNodeActor("node-1", None, str(tmp_path / "art"), str(tmp_path / "s"), slots=1)


def _task(network: str, port: int, backend: str = "bwrap") -> dict[str, Any]:
    return {
        "id": f"reach-{network}",
        "sandbox": {"type": backend, "network": network},
        "commands": [f"echo GCS-PROBE > /dev/tcp/127.0.0.1/{port} && echo reached"],
    }


@pytest.mark.parametrize("network", ["host"])
def test_a_task_with_the_host_network_cannot_reach_the_control_plane(
    tmp_path: Path, control_plane: tuple[int, list[bytes]], network: str
) -> None:
    require(HAVE_RAY, "ray is not installed (pip install 'shellrt[ray]')")
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed")
    require(not ray.is_initialized(), "another test left Ray connected")
    from shellrt.batch import Task

    port, seen = control_plane
    actor = _actor(tmp_path)
    data = Task.model_validate(_task(network, port)).model_dump(mode="json")
    try:
        out = asyncio.run(actor.run(data, 1, 1 << 20))
    finally:
        asyncio.run(actor.shutdown())
    result = out["result"]
    assert not any(b"GCS-PROBE" in s for s in seen), f"the task reached the control plane: {result}"
    assert result["status"] == "error" and "control plane" in (result["error"] or ""), result
    assert "--allow-task-local" in result["error"], result["error"]


def test_only_the_sandboxes_that_share_the_nodes_network_are_refused() -> None:
    require(HAVE_RAY, "ray is not installed (pip install 'shellrt[ray]')")
    from shellrt.batch import Task
    from shellrt.batch.ray_runner import reaches_cluster

    def task(backend: str, network: str) -> Task:
        sandbox: dict[str, Any] = {"type": backend, "network": network}
        if backend == "docker":
            sandbox["image"] = "busybox"
        return Task.model_validate({"id": "t", "sandbox": sandbox, "commands": ["true"]})

    assert reaches_cluster(task("docker", "bridge")) is not None
    assert reaches_cluster(task("docker", "host")) is not None
    for backend, network in [("bwrap", "none"), ("bwrap", "proxied"), ("docker", "none"), ("local", "host")]:
        assert reaches_cluster(task(backend, network)) is None, (backend, network)


def test_a_local_task_on_ray_is_announced_loudly(caplog: pytest.LogCaptureFixture) -> None:
    """The operator's explicit no-sandbox choice still works on Ray, and the driver says what it means."""
    require(HAVE_RAY, "ray is not installed (pip install 'shellrt[ray]')")
    from shellrt.batch import Task
    from shellrt.batch.ray_runner import warn_unsandboxed

    task = Task.model_validate({"id": "raw", "sandbox": "local", "commands": ["true"]})
    boxed = Task.model_validate({"id": "boxed", "sandbox": "bwrap", "commands": ["true"]})
    warned: set[str] = set()
    with caplog.at_level(logging.WARNING, logger="shellrt.batch"):
        warn_unsandboxed(boxed, warned)
        warn_unsandboxed(task, warned)
        warn_unsandboxed(task, warned)  # once per run, not per task
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "raw" in lines[0] and "control plane" in lines[0], lines


def test_the_nodes_ray_directories_come_from_the_public_api_and_fail_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Round 16 read the private ``ray._private.worker._global_node`` and, without it, masked
    nothing (a warning in the node's log). Now ``ray.nodes()`` (public) names the node's sockets,
    below ``<temp>/session_*/sockets/``; with neither, a node actor refuses to start. Ray's
    answers are given here (the real cluster's layout is pinned by round 16's node test)."""
    require(HAVE_RAY, "ray is not installed (pip install 'shellrt[ray]')")
    from shellrt.batch import ray_runner

    temp = tmp_path / "r"
    session = temp / "session_2026-12-03_20-30-23_487378_1044"
    (session / "sockets").mkdir(parents=True)

    class _Context:
        def get_node_id(self) -> str:
            return "n1"

    listed = [{"NodeID": "n0", "RayletSocketName": "/elsewhere/session_0/sockets/raylet"},
              {"NodeID": "n1", "RayletSocketName": str(session / "sockets" / "raylet")}]  # fmt: skip
    monkeypatch.delattr(ray._private.worker, "_global_node", raising=False)
    monkeypatch.setattr(ray, "get_runtime_context", _Context)
    monkeypatch.setattr(ray, "nodes", lambda: listed)
    monkeypatch.setattr(ray, "is_initialized", lambda: True)
    # Not connected: asking the cluster's config would start a Ray of its own (in /tmp/ray, ~/.ray).
    monkeypatch.setattr(ray_runner, "_cluster_system_config", lambda: None)
    assert ray_runner.ray_node_paths(str(tmp_path / "scratch")) == (str(temp),)
    # A temp dir holding the tasks' scratch: the session dir is masked instead.
    assert ray_runner.ray_node_paths(str(temp / "scratch")) == (str(session),)

    # Nothing names this node's directories: no task runs unmasked on it.
    monkeypatch.setattr(ray, "nodes", lambda: [{"NodeID": "n1", "RayletSocketName": "raylet"}])
    with pytest.raises(RuntimeError, match="runs no task"):
        ray_runner.ray_node_paths(str(tmp_path / "scratch"))
    with pytest.raises(RuntimeError, match="runs no task"):
        _actor(tmp_path)
