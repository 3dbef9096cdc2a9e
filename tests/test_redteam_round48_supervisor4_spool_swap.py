"""Red team, round 48 (supervisor4): a spool file swapped under its name was read as the output.

The host re-opens a spool by its name: TaskOutput reads a task's file (`TaskManager.read_new`), an
ended task's preview is read back from it (`OutputSpool._held`, rounds 42 and 45), and a spool made
from a spare is opened after its link. On the local backend a command reaches the session
directory (no filesystem boundary): it put a FIFO at a running task's name and TaskOutput blocked
for ever in a thread no cancellation reaches (the call, and the session's close after it, never
returned); a symbolic link there showed another file's bytes as the task's output; a file renamed
over an ended task's spool became its preview; a FIFO placed between a spare's link and its open
blocked that open on the event loop. Each open now takes the spool's own regular file or nothing.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import anyio
import pytest

from shellrt.supervisor import SupervisorError
from shellrt.supervisor.spool import SpoolFiles
from tests._local_session import local_supervisor

pytestmark = pytest.mark.anyio

_SECRET = b"TOPSECRET-not-the-task-output\n"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _unblock_fifo_later(fifo: Path, after_s: float, stop: threading.Event, *, flags: int) -> threading.Event:
    """Open ``fifo`` with ``flags`` after ``after_s`` (an open blocked at its other end goes on),
    unless ``stop`` is set first: on the unfixed tree the blocked thread would keep the test from
    ending. The event returned is set when it had to: what was tested waited on the FIFO (round 49:
    a fact, where "it took < 2 s" was a wall-clock bound a loaded lane can break)."""
    fired = threading.Event()

    def run() -> None:
        if stop.wait(after_s):
            return
        fired.set()
        try:
            fd = os.open(fifo, flags | os.O_NONBLOCK)
        except OSError:
            return
        os.close(fd)

    threading.Thread(target=run, daemon=True).start()
    return fired


async def test_a_swapped_task_spool_is_never_read(tmp_path: Path) -> None:
    """Failed before: the FIFO's read took until the test opened it (never, otherwise), the link's
    target was handed out as output, and a file renamed over the ended spool was its preview."""
    ws = tmp_path / "ws"
    ws.mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_bytes(_SECRET)
    async with local_supervisor(ws, tmp_path / "s") as sup:
        # 1. A FIFO at a running task's name: the read returns at once, and says why it read nothing.
        task = await sup.start_background("printf 'first line of the task output\\n'; sleep 30")
        execution = sup.tasks.execution(task.id)
        assert execution is not None
        path = execution.out.path
        while execution.out.saved_bytes == 0:
            await anyio.sleep(0.01)
        planted = await sup.run(f"rm -f '{path}' && mkfifo '{path}'", timeout_s=10)
        assert planted.exit_code == 0, planted.preview
        stop = threading.Event()
        fired = _unblock_fifo_later(path, 10.0, stop, flags=os.O_WRONLY)
        began = time.monotonic()
        try:
            with pytest.raises(SupervisorError, match="replaced"):
                await sup.tasks.read_new(task.id)
        finally:
            stop.set()
        took = time.monotonic() - began
        assert not fired.is_set(), f"a FIFO at the task's output name held TaskOutput {took:.1f} s"

        # 2. A symbolic link there: another file's bytes are never the task's output.
        planted = await sup.run(f"rm -f '{path}' && ln -s '{secret}' '{path}'", timeout_s=10)
        assert planted.exit_code == 0, planted.preview
        try:
            chunk = await sup.tasks.read_new(task.id)
        except SupervisorError as exc:
            assert "replaced" in str(exc)
        else:
            assert "TOPSECRET" not in chunk.text, "a link at the task's output name was read through"
        await sup.tasks.stop(task.id)

        # 3. A file renamed over an ended task's spool is not its preview.
        ended = await sup.start_background("head -c 40000 /dev/zero | tr '\\0' a")
        await sup.tasks.wait(ended.id)
        done = sup.tasks.execution(ended.id)
        assert done is not None
        spool = done.out.path
        forged = f"{spool}.forged"
        planted = await sup.run(
            f"head -c 40000 /dev/zero | tr '\\0' F > '{forged}' && mv -f '{forged}' '{spool}'", timeout_s=10
        )
        assert planted.exit_code == 0, planted.preview
        preview, _ = done.out.preview()
        assert "FFFF" not in preview, "a file renamed over an ended task's spool became its preview"
        assert "replaced" in preview
        assert b"F" not in done.out.head(16)


def test_a_fifo_put_between_a_spares_link_and_its_open_is_not_opened(tmp_path: Path) -> None:
    """Failed before: the open of the linked name blocked on the FIFO (on the event loop, in the
    pump) until the test opened it. The race's timing is forced: the link's caller is wrapped to
    put the FIFO in its place right after the link, as a command renaming in a loop would."""
    files = SpoolFiles(tmp_path, "cmd-test", spares=1)
    files.take()
    deadline = time.monotonic() + 10
    while not list(tmp_path.glob(".cmd-test-spare-*")) and time.monotonic() < deadline:
        time.sleep(0.01)
    target = tmp_path / "cmd-test-0001"
    real_link = os.link

    def link_then_swap(src: object, dst: object, *args: object, **kwargs: object) -> None:
        real_link(src, dst, *args, **kwargs)  # type: ignore[arg-type]
        os.unlink(target)
        os.mkfifo(target)

    stop = threading.Event()
    fired = _unblock_fifo_later(target, 10.0, stop, flags=os.O_RDONLY)
    began = time.monotonic()
    os.link = link_then_swap  # type: ignore[assignment]
    try:
        with pytest.raises(OSError):
            os.close(files.open_fresh(target))
    finally:
        os.link = real_link
        stop.set()
        files.close()
    took = time.monotonic() - began
    assert not fired.is_set(), f"the spool's open waited {took:.1f} s on a FIFO put at its name"
