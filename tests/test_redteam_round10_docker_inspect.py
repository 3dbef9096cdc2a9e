"""Red team round 10 (known gap of round 9), Inspect: the leftovers cleanup believed an image's labels.

``inspect sandbox cleanup shellrt`` removes, for every orphaned sample directory, the container
its ``container`` file names when that container is labelled ``shellrt.managed=1``, volumes
included, then the I/O directory its ``shellrt.io-dir`` label names. docker copies an image's
labels onto every container made from it: a container of an image wearing them passed, and a
directory the image named was deleted. The cleanup now asks what the reaper asks since round 9:
the container's name, which no image can set, is ``shellrt-<its session label>``.

A real container of a locally built image (FAIL, not skip, under CI=true); the test removes
only what it made.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from shellrt.integrations._inspect_leftovers import PREFIX, cleanup_leftovers
from tests._docker_support import require_docker
from tests.test_redteam_round9_docker_labels import IMAGE, _build

pytestmark = [pytest.mark.docker]


def test_the_inspect_cleanup_leaves_a_container_that_only_wears_shellrt_labels(tmp_path: Path) -> None:
    require_docker()
    victim_dir = tmp_path / "shellrt-docker-victim"
    victim_dir.mkdir()
    (victim_dir / "keep").write_text("a live session's files")
    _build(victim_dir)
    name = f"rt10-inspect-{secrets.token_hex(4)}"
    run = subprocess.run(
        ["docker", "run", "-d", "--name", name, "--label", "shellrt-test=rt10-inspect", "--network", "none",
         IMAGE, "sleep", "600"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )  # fmt: skip
    cid = run.stdout.strip()
    sample = Path(tempfile.mkdtemp(prefix=PREFIX))
    try:
        (sample / ".owner.lock").touch()  # its owner is gone: the lock is free
        (sample / "container").write_text(cid, encoding="ascii")
        old = time.time() - 60
        os.utime(sample, (old, old))
        cleanup_leftovers(sample.name)  # this directory only: other runs on the machine keep theirs
        alive = subprocess.run(["docker", "inspect", name], capture_output=True, timeout=30)
        assert alive.returncode == 0, "the Inspect cleanup removed a container shellrt never created"
        assert (victim_dir / "keep").exists(), "the cleanup deleted the directory an image's label named"
        assert not sample.exists()  # the orphaned sample directory itself is still removed
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, timeout=60)
        subprocess.run(["rm", "-rf", str(sample)], capture_output=True, timeout=60)
