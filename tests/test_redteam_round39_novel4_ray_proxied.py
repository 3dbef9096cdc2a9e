"""Red team, round 39 (novel4): a proxied Ray task listed the node's own addresses and reached them.

Round 17 refused ``network: host``/``bridge`` on a Ray node: the node's loopback and addresses
carry the cluster's control plane (the GCS, the raylet, the dashboard's job API on 127.0.0.1:8265:
code on every node). A task with ``network: proxied`` and ``allowed_domains`` naming
``127.0.0.1`` or ``localhost`` (a task file under ``--allow-task-network``, which round 17 reads as
"an unfiltered network, not the cluster") was let through: the filtering proxy runs on the node and
connects to an address the operator (here: the task file) listed, so the task reached a listener on
the node's loopback and read its answer. Each Ray task's proxy now denies every address of the node
and of the cluster's nodes (deny beats allow, judged on the address reached). The real
`ShellrtNodeActor` with real bwrap and its proxy; a listener on 127.0.0.1 stands for the GCS.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shellrt.batch import Task
from tests._tcp_server import recording_server
from tests.conftest import require

pytestmark = [pytest.mark.ray, pytest.mark.bwrap, pytest.mark.timeout(90)]


@pytest.fixture
def control_plane() -> Iterator[tuple[int, list[bytes]]]:
    """A listener on the node's loopback (the GCS, the dashboard): records what reaches it, answers."""
    with recording_server(b"HTTP/1.0 200 OK\r\n\r\nGCS-ANSWER\n") as served:
        yield served


def _run(tmp_path: Path, data: dict[str, Any]) -> dict[str, Any]:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed")
    from shellrt.batch.ray_runner import ShellrtNodeActor

    (tmp_path / "art").mkdir()
    (tmp_path / "s").mkdir()
    actor = ShellrtNodeActor("node-1", None, str(tmp_path / "art"), str(tmp_path / "s"), slots=1)
    try:
        out: dict[str, Any] = asyncio.run(actor.run(data, 1, 1 << 20))
    finally:
        asyncio.run(actor.shutdown())
    return out["result"]


@pytest.mark.parametrize("name", ["127.0.0.1", "localhost"])
def test_a_proxied_task_cannot_list_its_way_to_the_nodes_loopback(
    tmp_path: Path, control_plane: tuple[int, list[bytes]], name: str
) -> None:
    """Failed before (2 of 2): the listener got the task's request and the task printed its answer."""
    port, seen = control_plane
    task = Task.model_validate(
        {
            "id": "reach",
            "sandbox": {"type": "bwrap", "network": "proxied", "allowed_domains": [name]},
            "commands": [
                # past the NO_PROXY the sandbox sets for its own loopback: through the node's proxy
                f"env -u NO_PROXY -u no_proxy curl -sS -m 5 -x \"$HTTP_PROXY\" http://{name}:{port}/jobs; true"
            ],
        }
    )
    result = _run(tmp_path, task.model_dump(mode="json"))
    printed = repr(result)
    assert not any(b"/jobs" in s for s in seen), f"the task reached the node's loopback: {printed}"
    assert "GCS-ANSWER" not in printed, printed
    assert "deny" in (result["commands"][0]["preview"] or "") + result["commands"][0]["stderr"], printed


def test_the_denies_name_the_node_and_keep_the_tasks_own() -> None:
    """The task's own denies stay; loopback and this node's addresses are added (unit)."""
    from shellrt.batch._cluster_denies import with_cluster_denies

    task = Task.model_validate(
        {
            "id": "t",
            "sandbox": {"type": "bwrap", "allowed_domains": ["example.org"], "denied_domains": ["evil.example"]},
            "commands": ["true"],
        }
    )
    denied = with_cluster_denies(task.model_dump(mode="json"), ("10.1.2.3",))["sandbox"]["denied_domains"]
    assert "evil.example" in denied and "10.1.2.3" in denied, denied
    assert "127.0.0.0/8" in denied and "::1" in denied, denied
    again = Task.model_validate(with_cluster_denies(task.model_dump(mode="json"), ()))
    assert "evil.example" in again.sandbox.denied_domains
    plain = Task.model_validate({"id": "n", "sandbox": {"type": "bwrap"}, "commands": ["true"]})
    assert with_cluster_denies(plain.model_dump(mode="json"), ()) == plain.model_dump(mode="json")
