"""SIGTERM to ``shellrt run --sandbox docker`` removes its container even when the async close cannot finish.

A real process, a real container, real signals: the container is paused (its
executor cannot answer, so the orderly close needs its full kill grace), then
the owner gets SIGTERM and, as a service manager would, SIGKILL shortly after.
The container must be gone: the signal handler removes it synchronously.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests._docker_support import BUSYBOX, owned_containers, require_docker


def test_sigterm_removes_the_container_before_a_following_sigkill(tmp_path: Path) -> None:
    require_docker()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.Popen(
        [sys.executable, "-m", "shellrt", "run", "--sandbox", "docker", "--image", BUSYBOX,
         "--workspace", str(tmp_path), "--", "sleep 60"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    ids: list[str] = []
    try:
        deadline = time.monotonic() + 60
        while not ids and time.monotonic() < deadline:
            time.sleep(0.2)
            ids = owned_containers(proc.pid, running=True)
        assert ids, "no container started"
        time.sleep(1.0)  # the command runs
        subprocess.run(["docker", "pause", *ids], capture_output=True, timeout=60, check=True)
        proc.send_signal(signal.SIGTERM)
        time.sleep(2.0)  # shorter than the close's kill grace (5 s) on an unresponsive container
        proc.kill()
        proc.wait(timeout=30)
        assert owned_containers(proc.pid) == [], "the container outlived its owner"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for cid in ids:
            subprocess.run(["docker", "rm", "-f", cid], capture_output=True, timeout=60)
