"""Red team, round 42 (supervisor2): an entry removed under a session that runs something.

A session's entry among other shellrt processes' (`_host_pause_peers`) is what their hooks look
for before they run on the host. Removed while the session runs a long command (logind removes
``/run/user/<uid>`` at the last logout, a temp cleaner ages ``/tmp``), the session was unseen by
every hook until its next start made the entry again: a hook of another process then ran beside
its command (round 41's Left). A running session now finds its entry gone within about a second
and makes it again.
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


async def test_a_running_session_lists_itself_again(tmp_path: Path) -> None:
    """Failed before: the entry stayed gone for as long as the task ran (10 s here)."""
    from shellrt.supervisor import _host_pause_peers as peers

    ws = tmp_path / "ws"
    ws.mkdir()
    async with local_supervisor(ws, tmp_path / "s") as sup:
        task = await sup.start_background("sleep 60")
        (held,) = _held_entries()
        os.unlink(os.path.join(peers.registry(), held))  # as a registry's removal takes it
        assert not _held_entries()
        with anyio.move_on_after(10):
            while not _held_entries():
                await anyio.sleep(0.05)
        assert _held_entries(), "a session running a task stayed out of the registry"
        await sup.tasks.stop(task.id)
        assert not _held_entries()


def test_it_holds_for_an_unprivileged_caller() -> None:
    """The same as uid 65534 (the local backend's subreaper in place of the session cgroup, the
    registry in that uid's place)."""
    _nonroot.held_as_nobody(
        __file__,
        "test_a_running_session_lists_itself_again",
    )
