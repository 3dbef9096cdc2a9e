"""Red team, round 28 (supbatch): a full disk made shellrt kill every command that printed.

The session's output total lives in ``output-account`` (round 17), a file made empty at the session's
start and written at the first output. A command that filled the disk before its first byte
(``head -c 2M /dev/zero > fill; echo done``: a build, a download) made that write fail with
``ENOSPC``; the error escaped the pump, and shellrt killed the command ("Output capture failed
(OSError: [Errno 28] No space left on device); shellrt killed the command") with exit 141 -- and
every later command that printed, until space was freed. In a batch run such a task read
``failed`` whatever it did. The account is now written when it is opened (its bytes are on the
disk before a command can fill it), and a grant the account cannot record is output not saved
(the spool's lost-output note), never a capture failure. Root only (tmpfs of the test's own);
FAIL, not skip, under CI=true.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import anyio

from tests._local_session import local_supervisor, mount_tmpfs
from tests.conftest import require


def _fill(disk: Path) -> None:
    """Take every free byte of ``disk`` (as a command would)."""
    with open(disk / "filler", "ab") as fh:
        try:
            while True:
                fh.write(b"\0" * 65536)
                fh.flush()
        except OSError:
            pass


def test_commands_on_a_full_disk_run_to_their_own_exit(tmp_path: Path) -> None:
    """Failed before (2 of 2): exit 141 and "Output capture failed" for a command that filled the
    disk and printed, and for one that printed in a session opened on a full disk."""
    require(os.geteuid() == 0, "mounting a tmpfs needs root")
    ws = tmp_path / "ws"
    ws.mkdir()
    disks = [tmp_path / "a", tmp_path / "b"]
    for disk in disks:
        mount_tmpfs(disk, "size=2m")

    async def main() -> None:
        async with local_supervisor(ws, disks[0] / "s") as sup:
            filled = await sup.run(f"head -c 4M /dev/zero > {disks[0]}/fill; echo done", timeout_s=60)
            assert filled.exit_code == 0 and filled.preview.endswith("device\ndone\n"), (
                filled.exit_code,
                filled.notes,
            )
        _fill(disks[1])
        async with local_supervisor(ws, disks[1] / "s") as sup:
            for _ in range(2):  # and the next call too
                result = await sup.run("echo hi; exit 3", timeout_s=60)
                assert result.exit_code == 3 and result.preview == "hi\n", (
                    result.exit_code,
                    result.notes,
                )
                assert not any("capture failed" in n for n in result.notes), result.notes

    try:
        anyio.run(main)
    finally:
        for disk in disks:
            subprocess.run(["umount", "-l", str(disk)], check=False)
