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

from shellrt.integrations._inspect_leftovers import PREFIX, SampleDir, cleanup_leftovers
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


def test_an_id_naming_many_live_sandboxes_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``inspect sandbox cleanup shellrt ID`` removes the sandbox ID names even while it runs; an
    empty or short id matched every directory (``endswith("")``) and removed them all, live ones
    included. Now it must name exactly one (run in a private temp dir: others' sandboxes untouched)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    live = [SampleDir(), SampleDir()]
    try:
        for bad in ("", "  "):
            with pytest.raises(ValueError, match="empty sandbox id"):
                cleanup_leftovers(bad)
        assert cleanup_leftovers(live[0].path.name[-1]) == []  # one character names nothing
        for d in live:
            d.record_container("ab" * 32)
        with pytest.raises(ValueError, match="names 2 sandboxes"):
            cleanup_leftovers("ab" * 6)
        assert all(d.path.exists() for d in live)
        (live[1].path / "container").unlink()
        removed = cleanup_leftovers(live[0].path.name)
        assert len(removed) == 1 and removed[0].startswith(str(live[0].path))
        assert not live[0].path.exists() and live[1].path.exists()
    finally:
        for d in live:
            d.remove()
