"""Red team, round 49 (supervisor5): spool files written through in place, on the local backend.

Round 48 made every open of a spool by its name take only the inode the spool made
(`spool.open_own`). A command on local reaches the session directory and writes as the same uid,
so it wrote *through* those inodes instead of replacing them:

- the one empty file a Supervisor shared among every command with no output (its name hard-linked
  at each such ``output_path``): written once, every empty result's file showed it;
- a spare (the empty files made ahead and moved into place at a command's first byte): written
  before it was taken, its bytes stayed behind the next command's output in that command's file;
- an ended task's spool rewritten in place (same inode, same size): its preview, head and
  TaskOutput read showed what the command wrote there, not the task's output.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from shellrt.supervisor import SupervisorError
from tests._local_session import local_supervisor

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_no_command_writes_into_another_commands_output_file(tmp_path: Path) -> None:
    """Failed before: the second empty result's file held the first's planted bytes, and the
    spare's planted bytes followed ``ok`` in the next command's file."""
    ws = tmp_path / "ws"
    ws.mkdir()
    async with local_supervisor(ws, tmp_path / "s") as sup:
        first = await sup.run("true", timeout_s=10)
        assert first.output_path.read_bytes() == b""
        # the empty result's file, and every spare made ahead, written through (chmod: the shared
        # file was made read-only for its owner, which a command of that uid undoes)
        spool_dir = first.output_path.parent
        plant = await sup.run(
            f"chmod u+w '{first.output_path}' && printf PLANTED-EMPTY >> '{first.output_path}'; "
            f"for f in '{spool_dir}'/.cmd-*-spare-*; do printf PLANTED-SPARE-PLANTED-SPARE > \"$f\"; done; true",
            timeout_s=10,
        )
        assert plant.exit_code == 0, plant.preview
        second = await sup.run("true", timeout_s=10)
        assert second.preview == ""
        assert second.output_path.read_bytes() == b"", (
            "an empty result's output file holds what another command wrote into the first one's"
        )
        printed = await sup.run("echo ok", timeout_s=10)
        assert printed.preview == "ok\n"
        assert printed.output_path.read_bytes() == b"ok\n", (
            "a command's output file holds bytes another command wrote into a spare"
        )


async def test_an_ended_spool_rewritten_in_place_is_not_shown_as_its_output(tmp_path: Path) -> None:
    """Failed before: the preview's head and last lines and the TaskOutput read showed the ``F``
    bytes written over the ended tasks' spools in place (same inode, same size)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    async with local_supervisor(ws, tmp_path / "s") as sup:
        shown = await sup.start_background("head -c 40000 /dev/zero | tr '\\0' a")
        unread = await sup.start_background("head -c 40000 /dev/zero | tr '\\0' b")
        for task in (shown, unread):
            await sup.tasks.wait(task.id)
        done, pending = sup.tasks.execution(shown.id), sup.tasks.execution(unread.id)
        assert done is not None and pending is not None
        while not done.out._released:  # the end's callback lets the memory go: read back from the file
            await anyio.sleep(0.01)
        assert "aaaa" in done.out.preview()[0]
        # both spools rewritten through their own inode: same size, first and last bytes forged
        rewrite = " && ".join(
            f"printf FFFFFFFF | dd of='{p}' bs=1 seek={seek} conv=notrunc status=none"
            for p in (done.out.path, pending.out.path)
            for seek in (0, 39992)
        )
        planted = await sup.run(rewrite, timeout_s=10)
        assert planted.exit_code == 0, planted.preview
        assert done.out.path.stat().st_size == 40000
        preview, _ = done.out.preview()
        assert "FFFF" not in preview, f"a spool rewritten in place became the ended task's preview: {preview[:40]!r}"
        assert b"F" not in done.out.head(16)
        assert not any("F" in line for line in done.out.last_lines())
        try:
            chunk = await sup.tasks.read_new(unread.id)
        except SupervisorError as exc:
            assert "rewritten" in str(exc) or "replaced" in str(exc), exc
        else:
            assert "F" not in chunk.text, "TaskOutput read a spool rewritten in place as the task's output"
