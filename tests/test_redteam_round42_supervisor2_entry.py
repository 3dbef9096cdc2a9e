"""Red team, round 42 (supervisor2): a session's registry entry held after nothing ran any more.

A session `flock`s its entry among other shellrt processes' (`_host_pause_peers`) while it runs
anything; their hooks are refused meanwhile (fail closed). A foreground `run` that raised (its
caller cancelled it) and a command moved to the background on its timeout that then ended both
left the entry locked until the session's next call or close: every hook of every other shellrt
process on the workspace was refused for a session that ran nothing (round 41's Left, and a
second way found here).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import anyio
import pytest

from tests import _nonroot
from tests._local_session import local_supervisor

pytestmark = pytest.mark.anyio


def _held_entries() -> list[str]:
    """This process's session entries whose lock is held (a busy session's)."""
    from shellrt.supervisor import _host_pause_peers as peers

    ours = f"b-{peers._SELF}-{os.getpid()}-"
    held = []
    for name in os.listdir(peers.registry()):
        if name.startswith(ours):
            fd = os.open(os.path.join(peers.registry(), name), os.O_RDONLY)
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                held.append(name)
            finally:
                os.close(fd)
    return held


async def test_a_cancelled_run_lets_its_entry_go(tmp_path: Path) -> None:
    """Failed before: the entry stayed locked after the cancelled run had killed its command."""
    ws = tmp_path / "ws"
    ws.mkdir()
    async with local_supervisor(ws, tmp_path / "s") as sup:
        with anyio.move_on_after(0.3) as scope:
            await sup.run("sleep 60", timeout_s=120)
        assert scope.cancelled_caught
        assert not sup._busy(), "the cancelled command still counted as running"
        assert not _held_entries(), "a cancelled run left its session's entry locked"


async def test_a_command_backgrounded_on_timeout_lets_it_go_at_its_end(tmp_path: Path) -> None:
    """Failed before: the task had ended, and the entry stayed locked until the next call."""
    ws = tmp_path / "ws"
    ws.mkdir()
    os.mkfifo(tmp_path / "go")
    async with local_supervisor(ws, tmp_path / "s") as sup:
        result = await sup.run(
            f"read _ < {tmp_path / 'go'}; echo done", timeout_s=0.2, background_on_timeout=True
        )
        task_id = result.backgrounded_task_id
        assert task_id is not None
        assert _held_entries(), "no entry held while the backgrounded command runs"
        with anyio.fail_after(60):
            async with await anyio.open_file(tmp_path / "go", "w") as go:
                await go.write("x\n")
            await sup.tasks.wait(task_id)
        assert not _held_entries(), "a backgrounded command that ended left the entry locked"


def test_it_holds_for_an_unprivileged_caller() -> None:
    """The same as uid 65534 (the local backend's subreaper in place of the session cgroup, the
    registry in that uid's place)."""
    _nonroot.held_as_nobody(
        __file__,
        "test_a_cancelled_run_lets_its_entry_go",
        "test_a_command_backgrounded_on_timeout_lets_it_go_at_its_end",
    )
