"""Red team, round 27 (sup): a full disk under the session made a background start crash.

A command fills the file system the session's spool lives on (bytes, or inodes: millions of
empty files in a workspace on the same disk; a new file then needs an inode or a directory
block). A foreground call already ran on ("only the first 0 bytes are saved"), but a background
start raised the spool's ``OSError`` (``[Errno 28] No space left on device``) out of
`Supervisor.start_background`: the Bash tool answered "Bash failed unexpectedly: OSError ...".
The spool now records the failed create as lost output, as it does a failed write: the task
starts, its state says what was lost and why (free space, or set TMPDIR elsewhere), and the next
calls work. Root only (a tmpfs of the test's own); FAIL, not skip, under CI=true.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import anyio

from sandbox import SandboxPolicy
from sandbox.local import LocalBackend
from shellrt.supervisor import Supervisor, TaskStatus
from tests.conftest import require

#: Inodes of the session's tmpfs: its directories and a few spool files, then none.
_INODES = 24


def test_a_background_start_on_a_full_disk_runs_and_says_what_was_lost(tmp_path: Path) -> None:
    """Failed before (1 of 1): ``OSError: [Errno 28] No space left on device`` from the start."""
    require(os.geteuid() == 0, "mounting a tmpfs needs root")
    disk = tmp_path / "disk"
    disk.mkdir()
    mount = ["mount", "-t", "tmpfs", "-o", f"size=1m,nr_inodes={_INODES}", "tmpfs", str(disk)]
    mounted = subprocess.run(mount, capture_output=True, check=False)
    require(mounted.returncode == 0, f"cannot mount a tmpfs here: {mounted.stderr!r}")
    ws = tmp_path / "ws"
    ws.mkdir()

    async def main() -> None:
        backend = LocalBackend(policy=SandboxPolicy(workspace=ws))
        await backend.start()
        try:
            async with Supervisor(backend, session_dir=disk / "s") as sup:
                for n in range(_INODES):  # the session's own files take the inodes left
                    subprocess.run(["touch", str(disk / f"fill-{n}")], capture_output=True, check=False)
                task = await sup.start_background("echo started", description="on a full disk")
                done = await sup.tasks.wait(task.id)
                assert done.status is TaskStatus.COMPLETED
                assert done.note is not None and "full" in done.note and "free space" in done.note, done.note
                chunk = await sup.tasks.read_new(task.id)
                # what memory kept is read (round 28: it was "", the output only in memory)
                assert chunk.text == "started\n" and not chunk.more_available
                after = await sup.run("echo next", timeout_s=60)  # the next call works
                assert after.exit_code == 0 and after.preview == "next\n"
        finally:
            await backend.close()

    try:
        anyio.run(main)
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)
