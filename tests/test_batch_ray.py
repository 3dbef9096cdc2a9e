"""A real two-node Ray cluster on this machine (``ray start``): tasks spread over both nodes,
and killing the second node mid-run still yields every result exactly once.

Each node is started with ``ray start --block`` in its own session and its own
``--temp-dir``, so the test can kill exactly that node (every process of its
session) without ``ray stop``, which would stop every Ray instance on the machine.
Run alone with ``make ray-test``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import psutil
import pytest

from tests._proc_words import shown_words
from tests.conftest import require

pytestmark = [pytest.mark.ray, pytest.mark.slow, pytest.mark.anyio, pytest.mark.timeout(300)]

try:
    import ray  # noqa: F401

    HAVE_RAY = True
except ImportError:  # pragma: no cover - depends on the extra
    HAVE_RAY = False

RAY_BIN = shutil.which("ray") or os.path.join(os.path.dirname(sys.executable), "ray")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class _RayNode:
    proc: subprocess.Popen[bytes]
    temp_dir: str
    log: Path

    def session_pids(self) -> list[psutil.Process]:
        found = []
        for p in psutil.process_iter():
            try:
                if os.getsid(p.pid) == self.proc.pid:
                    found.append(p)
            except (ProcessLookupError, PermissionError, psutil.Error):
                continue
        return found

    def kill(self) -> None:
        """SIGKILL every process of this node (raylet, agents, workers) — a lost machine."""
        for _ in range(3):
            procs = self.session_pids()
            if not procs:
                break
            for p in procs:
                try:
                    p.kill()
                except psutil.Error:
                    pass
            psutil.wait_procs(procs, timeout=5)
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)


def _start_node(args: list[str], resources: dict[str, int], workdir: Path, name: str) -> _RayNode:
    temp_dir = tempfile.mkdtemp(prefix=f"rt{name}-")  # short: unix socket paths live under it
    log = workdir / f"{name}.log"
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0")
    env["PYTHONPATH"] = str(Path(__file__).resolve().parent.parent)
    cmd = [
        RAY_BIN,
        "start",
        *args,
        "--num-cpus=1",
        f"--resources={json.dumps(resources)}",
        "--disable-usage-stats",
        f"--temp-dir={temp_dir}",
        "--block",
    ]
    with log.open("wb") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True, env=env)
    node = _RayNode(proc, temp_dir, log)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace")
        if "Ray runtime started" in text:
            return node
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    node.kill()
    raise RuntimeError(f"ray node {name} did not start:\n{log.read_text(errors='replace')[-3000:]}")


@dataclass
class _Cluster:
    address: str
    head: _RayNode
    second: _RayNode


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Cluster]:
    require(HAVE_RAY, "ray is not installed (pip install 'shellrt[ray]')")
    workdir = tmp_path_factory.mktemp("ray")
    port = _free_port()
    t0 = time.monotonic()
    head = _start_node(["--head", f"--port={port}", "--include-dashboard=false"], {"nodeA": 1}, workdir, "A")
    nodes = [head]
    try:
        second = _start_node([f"--address=127.0.0.1:{port}"], {"nodeB": 1}, workdir, "B")
        nodes.append(second)
        print(f"ray cluster up in {time.monotonic() - t0:.1f}s")
        yield _Cluster(f"127.0.0.1:{port}", head, second)
    finally:
        import ray as _ray

        if _ray.is_initialized():
            _ray.shutdown()
        for node in reversed(nodes):
            node.kill()
            shutil.rmtree(node.temp_dir, ignore_errors=True)
        assert all(not n.session_pids() for n in nodes)


def _tasks(n: int, command: str, prefix: str) -> list[object]:
    from shellrt.batch import Task

    return [
        Task.model_validate({"id": f"{prefix}{i:03d}", "commands": [command, "echo $HOSTNAME-ok"]})
        for i in range(n)
    ]


async def test_100_tasks_run_across_both_nodes(cluster: _Cluster, tmp_path: Path) -> None:
    from shellrt.batch import Task, run

    out = tmp_path / "results.jsonl"
    tasks = _tasks(99, "true", "a")
    tasks.append(
        Task.model_validate(
            {
                "id": "a099",
                "commands": ["echo exported > report.txt; seq 1 100000"],
                "collect": {"output": "full", "files": ["report.txt"], "preview_bytes": 100},
            }
        )
    )
    results = [
        r async for r in run(tasks, ray_address=cluster.address, out=out, artifacts_dir=tmp_path / "art")
    ]
    assert len(results) == 100 and len({r.id for r in results}) == 100
    assert all(r.status == "ok" for r in results), [r.error for r in results if r.error][:3]
    by_label = Counter(r.node_label for r in results)
    assert set(by_label) == {"nodeA", "nodeB"}, by_label
    assert len({r.node for r in results}) == 2  # two distinct Ray node ids
    assert len(out.read_text().splitlines()) == 100
    exported = next(r for r in results if r.id == "a099")
    # the export travels to the driver; the big output stays on the node's disk, only its preview travels
    assert (tmp_path / "art" / "a099" / "files" / "report.txt").read_text() == "exported\n"
    assert exported.files == ["report.txt"]
    big = exported.commands[0]
    assert big.truncated and len(big.preview or "") < 400 and big.total_bytes > 500_000
    assert big.output_path and not big.output_path.startswith(str(tmp_path))
    assert Path(big.output_path).stat().st_size == big.total_bytes  # (same machine: we can look)
    shutil.rmtree(Path(big.output_path).parent.parent, ignore_errors=True)


async def test_cancelling_the_driver_tears_down_sandboxes_on_every_node(cluster: _Cluster) -> None:
    import anyio

    from shellrt.batch import Task, run
    from tests._batch_helpers import processes_with_marker

    marker = f"raycancel-{os.getpid()}"
    tasks = [
        Task.model_validate({"id": f"c{i}", "commands": ["sleep 1000"], "env": {"M": marker}})
        for i in range(6)
    ]
    with anyio.move_on_after(60) as scope:
        async with run(tasks, ray_address=cluster.address) as stream:
            with anyio.fail_after(45):
                while len(processes_with_marker(marker)) < 2:  # one per node (1 slot each)
                    await anyio.sleep(0.1)
            scope.cancel()
            async for _ in stream:
                raise AssertionError("no task can finish")
    assert scope.cancelled_caught
    assert processes_with_marker(marker) == []


async def test_killing_the_second_node_mid_run_still_yields_every_result(
    cluster: _Cluster, tmp_path: Path
) -> None:
    from shellrt.batch import TaskResult, run

    out = tmp_path / "results.jsonl"
    results: list[TaskResult] = []
    killed_at = None
    async with run(_tasks(100, "sleep 0.1", "k"), ray_address=cluster.address, out=out) as stream:
        async for result in stream:
            results.append(result)
            if killed_at is None and sum(r.node_label == "nodeB" for r in results) >= 10:
                killed_at = len(results)
                cluster.second.kill()
    assert killed_at is not None and killed_at < 100, "node B never ran tasks"
    ids = [json.loads(line)["id"] for line in out.read_text().splitlines()]
    assert Counter(ids) == Counter({f"k{i:03d}": 1 for i in range(100)})
    assert all(r.status == "ok" for r in results), [r.error for r in results if r.error][:3]
    after = results[killed_at:]
    assert after and all(r.node_label == "nodeA" for r in after[1:])
    assert not cluster.second.session_pids()
    # sandboxes of the killed node die with it, nothing of ours is left on node A either; a killed
    # node's go asynchronously (its pid namespaces' teardown, its owners' watchdogs), within seconds
    deadline = time.monotonic() + 15
    while (leftovers := [p for p in psutil.process_iter() if _is_our_shell(p)]) and time.monotonic() < deadline:
        await anyio.sleep(0.2)
    assert leftovers == [], [" ".join(shown_words(p.pid)) for p in leftovers]


def _is_our_shell(p: psutil.Process) -> bool:
    try:
        return "sleep 0.1" in " ".join(shown_words(p.pid)) and "SHELLRT_CWD_FILE" in " ".join(
            shown_words(p.pid)
        )
    except psutil.Error:
        return False


_ = signal  # keep the import for readers running this file by hand
