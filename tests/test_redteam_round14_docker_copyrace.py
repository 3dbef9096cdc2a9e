"""Red team round 14, docker copy mode: the copy-in followed a symlink swapped in after the listing.

Copy mode copies the host workspace into a private directory before the container starts
(and again for each task a recycled container takes). The copy was ``shutil.copytree(...,
symlinks=True)``: a symlink *listed* as one is copied as a link, but a regular file or directory
that turns into a symlink between the listing and its copy is opened by path, the link followed,
as the host's user — root on CI hosts and services. A command of another session on the same
host directory (a bwrap or bind-mode docker session on the same repository; the docker session
then holds the copy) that flips ``notes.txt`` and ``docs/`` to symlinks in a loop gets, in the
container, any file root may read (``/etc/shadow``, ``/root/.ssh``) — chowned to the command
user — and a link to ``/dev/zero`` made the host copy forever, filling the host's disk.

The swap is made at the worst moment by wrapping the listing's filter (the racer only needs
``rename`` in a loop; the wrapper fixes its timing). Now the copy walks by descriptors: every
name is opened without following a link, relative to its parent's descriptor, and copied only
when what was opened is what was listed (type and inode); anything that changed is left out.

Real containers (FAIL, not skip, under CI=true).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from sandbox.docker import DockerBackend, _workspace
from tests._docker_support import BUSYBOX, config, policy, require_docker, run_sh

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

SECRET = "rt14-copy-secret-0xFEEDFACE"


def _racer(monkeypatch: pytest.MonkeyPatch, ws: Path, outside: Path) -> list[str]:
    """Swap ``notes.txt`` and ``docs`` for symlinks right after the workspace root was listed."""
    original = _workspace.left_out
    done: list[str] = []

    def after_listing(directory: str, names: list[str], *args: Any, **kwargs: Any) -> list[str]:
        skip = original(directory, names, *args, **kwargs)
        if os.path.abspath(directory) == str(ws) and not done:
            for name, target in (("notes.txt", outside / "secret.txt"), ("docs", outside / "dir")):
                os.rename(ws / name, ws / f".{name}.old")
                os.symlink(target, ws / name)
                done.append(name)
        return skip

    monkeypatch.setattr(_workspace, "left_out", after_listing)
    return done


async def test_a_file_or_directory_swapped_for_a_symlink_is_not_copied_through_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_docker()
    outside = tmp_path / "host-only"
    (outside / "dir").mkdir(parents=True)
    (outside / "secret.txt").write_text(SECRET + "\n")
    (outside / "dir" / "key").write_text(SECRET + "\n")
    os.chmod(outside, 0o700)
    ws = tmp_path / "ws"
    (ws / "docs").mkdir(parents=True)
    (ws / "docs" / "readme").write_text("docs\n")
    (ws / "notes.txt").write_text("notes\n")
    (ws / "kept.txt").write_text("kept\n")
    swapped = _racer(monkeypatch, ws, outside)
    async with DockerBackend(config(BUSYBOX, workspace_mode="copy"), policy(ws)) as backend:
        assert swapped == ["notes.txt", "docs"]
        _, seen = await run_sh(backend, "cat notes.txt docs/key kept.txt 2>&1; ls -la . docs 2>&1; echo end")
    assert SECRET not in seen, f"the copy-in followed a symlink swapped in after the listing: {seen!r}"
    assert "kept" in seen and seen.strip().endswith("end"), seen
