"""A small tmpfs of a test's own, to fill: what a full disk does to shellrt's writers (round 16)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.conftest import require

__all__ = ["mounted_tmpfs"]


@contextmanager
def mounted_tmpfs(tmp_path: Path, size: int) -> Iterator[Path]:
    """A ``size``-byte tmpfs mounted on ``tmp_path/disk`` (root only; unmounted after)."""
    require(os.geteuid() == 0, "mounting a tmpfs needs root")
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(disk)], capture_output=True)
    require(mounted.returncode == 0, f"cannot mount a tmpfs here: {mounted.stderr!r}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)
