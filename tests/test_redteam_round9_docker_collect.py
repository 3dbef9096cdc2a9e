"""Red team round 9, docker: a batch task's ``collect.files`` wrote its whole workspace to the host.

Round 6 bounded what ``collect.files`` copies (``collect.max_bytes``, then the run's output
budget): ``truncate -s 1T out/big`` is free in the workspace and costs the host its size. On
docker the worker first exported the container's *whole* workspace through the daemon into the
task's temp directory (bounded only by the export's own 16 GiB), and matched the patterns
there: a task asking for one small file, with ``max_bytes`` 1000, put every byte of a sparse
300 MB file it never asked for on the host's disk. Copy mode's workspace is a host directory
already (the container bind-mounts it): the files are now collected from it directly, with
the same anchored, bounded copy as on bwrap, and nothing else comes out.

Real containers (FAIL, not skip, under CI=true).
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from shellrt.batch.tasks import Task
from shellrt.batch.worker import WorkerSettings, run_task
from tests._docker_support import DEBIAN, require_docker

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

_SPARSE = 300 * 1024 * 1024


def _bytes_on_disk(root: Path) -> int:
    total = 0
    for top, _dirs, files in os.walk(root):
        for name in files:
            try:
                total += os.lstat(os.path.join(top, name)).st_blocks * 512
            except OSError:
                pass
    return total


async def test_collecting_one_file_writes_no_other_bytes_to_the_host(tmp_path: Path) -> None:
    require_docker()
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    task = Task.model_validate(
        {
            "id": "rt9-collect",
            "sandbox": {"backend": {"type": "docker", "image": DEBIAN}},
            "commands": [f"echo hi > small && truncate -s {_SPARSE} big && mkdir -p d && ln -s / d/root"],
            "collect": {"files": ["small", "d/**"], "max_bytes": 1000},
        }
    )
    peak = [0]
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], _bytes_on_disk(scratch))
            time.sleep(0.02)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        result = await run_task(task, WorkerSettings(artifacts_dir=tmp_path / "art", scratch_dir=scratch))
    finally:
        stop.set()
        watcher.join()
    assert result.status == "ok", result.error
    assert result.files == ["small"]
    assert (tmp_path / "art" / "rt9-collect" / "files" / "small").read_text() == "hi\n"
    assert peak[0] < 50 * 1024 * 1024, (
        f"{peak[0]} bytes reached the host's disk to collect one 3-byte file (collect.max_bytes 1000)"
    )
