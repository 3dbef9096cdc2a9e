"""Test helpers: a local-backend supervisor session, and a tmpfs of a test's own (a disk to fill)."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from sandbox import SandboxPolicy
from sandbox.local import LocalBackend
from shellrt.supervisor import Supervisor
from tests.conftest import require


@asynccontextmanager
async def local_supervisor(workspace: Path, session_dir: Path) -> AsyncIterator[Supervisor]:
    """A `Supervisor` over a started `LocalBackend` for ``workspace``; both closed at the end."""
    backend = LocalBackend(policy=SandboxPolicy(workspace=workspace))
    await backend.start()
    try:
        async with Supervisor(backend, session_dir=session_dir) as sup:
            yield sup
    finally:
        await backend.close()


def mount_tmpfs(disk: Path, options: str) -> None:
    """Make ``disk`` and mount a tmpfs there (``size=1m,...``); skipped (FAILS under CI) when it
    cannot be mounted. Unmount it with ``umount -l`` in the test's ``finally``."""
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(disk)], capture_output=True)
    require(mounted.returncode == 0, f"cannot mount a tmpfs here: {mounted.stderr!r}")
