"""Red team, round 28 (supbatch): a background task's output the disk refused was unreadable.

A command fills the file system under the session's spool (round 27 kept such a task starting),
then prints. The spool keeps a head and a tail in memory (16 KiB each: 300 MB printed grew the
owner's peak RSS by 1.1 MB, so memory is bounded), but TaskOutput read only the file: with no file
(no inode left) it returned nothing at all, and with a file cut at the disk's reserve it stopped
there, so the end of the output -- the part a model most wants (the error, "END") -- was in memory
and never shown. TaskOutput now goes on past the file with what memory holds (the head, then the
tail) and says how many bytes between them are lost. Root only (tmpfs of the test's own); FAIL,
not skip, under CI=true.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import anyio

from shellrt.supervisor import Supervisor, TaskOutputChunk, TaskStatus
from shellrt.tools.task_output import format_task_output
from tests._local_session import local_supervisor, mount_tmpfs
from tests.conftest import require

#: What each task prints: a first line, 3 MB without a newline, a last line.
_COMMAND = "echo FIRST; head -c 3000000 /dev/zero | tr '\\0' a; echo; echo LAST"


async def _read_all(sup: Supervisor, task_id: str) -> list[TaskOutputChunk]:
    chunks = [await sup.tasks.read_new(task_id)]
    while chunks[-1].more_available and len(chunks) < 40:
        chunks.append(await sup.tasks.read_new(task_id))
    return chunks


def test_taskoutput_shows_what_memory_kept_of_output_the_disk_refused(tmp_path: Path) -> None:
    """Failed before (2 of 2): no inode left, TaskOutput gave "" for a task that printed
    "FIRST ... LAST"; a disk full mid-output, its reads ended at the file's last byte."""
    require(os.geteuid() == 0, "mounting a tmpfs needs root")
    ws = tmp_path / "ws"
    ws.mkdir()
    no_inode, small = tmp_path / "noinode", tmp_path / "small"
    mount_tmpfs(no_inode, "size=1m,nr_inodes=24")
    mount_tmpfs(small, "size=1m")

    async def one(disk: Path, fill_inodes: bool) -> tuple[list[TaskOutputChunk], int]:
        async with local_supervisor(ws, disk / "s") as sup:
            for n in range(24 if fill_inodes else 0):  # the session's own files took the rest
                subprocess.run(["touch", str(disk / f"fill-{n}")], capture_output=True, check=False)
            task = await sup.start_background(_COMMAND, description="on a full disk")
            done = await sup.tasks.wait(task.id)
            assert done.status is TaskStatus.COMPLETED
            assert done.note is not None and "not saved" in done.note, done.note
            return await _read_all(sup, task.id), sup.tasks.execution(task.id).out.saved_bytes  # type: ignore[union-attr]

    try:
        for disk, fill in ((no_inode, True), (small, False)):
            chunks, saved = anyio.run(one, disk, fill)
            text = "".join(c.text for c in chunks)
            lost = sum(c.lost_bytes for c in chunks)
            assert text.startswith("FIRST\n"), (disk.name, text[:40])
            assert text.endswith("\nLAST\n"), (disk.name, text[-40:])
            # Every byte is accounted for: read (from the file or memory) or said to be lost.
            assert sum(c.new_bytes for c in chunks) + lost == 3_000_000 + 12, (disk.name, lost)
            assert lost > 1_500_000 and not chunks[-1].more_available, (disk.name, lost, len(chunks))
            if disk is small:
                assert saved > 500_000, saved  # the file's part was read first, then memory's
            shown = "".join(format_task_output(c) for c in chunks)
            assert f"{lost:,} bytes of output" in shown and "lost" in shown, shown[-600:]
    finally:
        for disk in (no_inode, small):
            subprocess.run(["umount", "-l", str(disk)], check=False)
