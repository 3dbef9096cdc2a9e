"""Red team, round 50 (supervisor6): a background task's spool written through in place while it ran.

Round 49 sealed a spool as it closed (size, modification and change times) and hashed a released
head and tail; round 49's Left: a *running* task's spool written through its own inode (same uid on
the local backend: ``dd conv=notrunc``) was read as it was. TaskOutput of the running task returned
the forged bytes, and so did a read after its end: the seal, taken at the end, took the forgery in.
Each block of a spool is now hashed as the host writes it, and every read by name checks the
blocks it returns (`OutputSpool.read_at`).
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from shellrt.supervisor import SupervisorError
from tests._local_session import local_supervisor

pytestmark = pytest.mark.anyio

#: Output a task prints before it waits (three 64 KiB blocks and a part: forged in the middle).
_SIZE = 200_000


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_running_tasks_spool_written_in_place_is_never_read_as_its_output(tmp_path: Path) -> None:
    """Failed before: both reads returned the ``F`` bytes written into the spools (one task still
    running, one stopped after the write)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    async with local_supervisor(ws, tmp_path / "s") as sup:
        # Each prints, then idles (ended by TaskStop or the session's close).
        printing = f"yes aaaaaaa | head -c {_SIZE}; exec sleep 3050"
        running = await sup.start_background(printing)
        stopped = await sup.start_background(printing)
        outs = []
        for task in (running, stopped):
            execution = sup.tasks.execution(task.id)
            assert execution is not None
            with anyio.fail_after(60):
                while execution.out.saved_bytes < _SIZE:  # the real condition: all of it in the file
                    await anyio.sleep(0.02)
            outs.append(execution.out)
        # Written through the running spools' own inodes: a block in the middle and the last part.
        rewrite = " && ".join(
            f"printf FFFFFFFF | dd of='{out.path}' bs=1 seek={seek} conv=notrunc status=none"
            for out in outs
            for seek in (100_000, _SIZE - 8)
        )
        planted = await sup.run(rewrite, timeout_s=30)
        assert planted.exit_code == 0, planted.preview
        assert b"FFFF" in outs[0].path.read_bytes()  # the premise: the file holds the forgery
        await sup.tasks.stop(stopped.id)
        await sup.tasks.wait(stopped.id)
        forged: list[str] = []
        for task, label in ((running, "running"), (stopped, "stopped after the write")):
            read = b""
            try:
                while True:
                    chunk = await sup.tasks.read_new(task.id, max_bytes=64 << 10)
                    if not chunk.new_bytes:
                        break
                    read += chunk.text.encode()
            except SupervisorError as exc:
                assert "rewritten" in str(exc)
            if b"F" in read:
                forged.append(label)
            assert set(read) <= set(b"aF\n")
        assert not forged, f"TaskOutput returned bytes another command wrote into these tasks' spools: {forged}"
        # Control: an untouched running task reads whole.
        clean = await sup.start_background(printing)
        execution = sup.tasks.execution(clean.id)
        assert execution is not None
        with anyio.fail_after(60):
            while execution.out.saved_bytes < _SIZE:
                await anyio.sleep(0.02)
        read = b""
        while len(read) < _SIZE:
            chunk = await sup.tasks.read_new(clean.id, max_bytes=50_000)
            assert chunk.new_bytes
            read += chunk.text.encode()
        assert read == b"aaaaaaa\n" * (_SIZE // 8)


def test_every_read_of_a_hashed_spool_is_checked_block_by_block(tmp_path: Path) -> None:
    """Reads across block edges and past the end give exactly what was written, the last block
    still growing; one byte written through the open spool's inode fails every read of its block
    (and only of it) while it is still open."""
    import errno
    import os
    import random

    from shellrt.supervisor.spool import _SUM_BLOCK, OutputSpool

    rnd = random.Random(50)
    spool = OutputSpool(tmp_path / "t.out", checked=True)
    data = b""
    for size in (1, 100, _SUM_BLOCK - 101, 1, _SUM_BLOCK, 3 * _SUM_BLOCK + 7, 5):
        chunk = rnd.randbytes(size)
        spool.write(chunk)
        data += chunk
        for start in (0, _SUM_BLOCK - 1, _SUM_BLOCK, len(data) - 1, len(data), rnd.randrange(len(data))):
            for size_read in (1, 2, _SUM_BLOCK, 3 * _SUM_BLOCK, 1 << 30):
                assert spool.read_at(start, size_read) == data[start : start + size_read]
    forged = 2 * _SUM_BLOCK + 5
    fd = os.open(spool.path, os.O_WRONLY)
    try:
        os.pwrite(fd, bytes([data[forged] ^ 1]), forged)
    finally:
        os.close(fd)
    for start, size_read in ((forged, 1), (2 * _SUM_BLOCK, 10), (0, 3 * _SUM_BLOCK)):
        with pytest.raises(OSError) as caught:
            spool.read_at(start, size_read)
        assert caught.value.errno == errno.ESTALE
    assert spool.read_at(0, 2 * _SUM_BLOCK) == data[: 2 * _SUM_BLOCK]
    assert spool.read_at(3 * _SUM_BLOCK, 100) == data[3 * _SUM_BLOCK : 3 * _SUM_BLOCK + 100]
    spool.close()
    plain = OutputSpool(tmp_path / "p.out")  # a foreground command's: never read back unchecked
    plain.write(b"x")
    plain.close()
    with pytest.raises(OSError):
        plain.read_at(0, 1)
