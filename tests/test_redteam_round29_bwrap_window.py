"""Red team, round 29 (bwrap): a running command keeps the masks of its start (round 27/28 "Left").

A place made while a session's commands run is hidden from the next command on (its zygote is
replaced), but commands already running in the replaced zygote kept the old view for as long as
they ran: a background task waiting for a read-denied file the host writes into the workspace read
it whenever it appeared, and again at every change, for the rest of the session. They now end when
the zygote is replaced for a read-denied path or a shellrt place, with a sandbox failure that says
why: the reach is bounded by the next command's start (what was read meanwhile is read). A new host
socket still retires the zygote without ending its commands (any host process makes those).
Root and uid 65534.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.bwrap import BwrapBackend
from shellrt.supervisor import Supervisor
from tests import _nonroot
from tests._bwrap_session import require_bwrap, supervised

pytestmark = pytest.mark.bwrap

#: A background task polling for the denied file; it says what it read.
_WAITER = "while :; do cat .env 2>/dev/null; sleep 0.1; done"


async def _ended(sup: Supervisor, task_id: str, within: float) -> str:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        task = sup.tasks.get(task_id)
        if task.status != "running":
            execution = sup.tasks._tasks[task_id].execution  # the backend's own word on why
            status = execution.status if execution is not None else None
            # The task's own note says why (it read "killed ... from outside shellrt" before).
            assert task.note is not None and task.note.startswith("the sandbox ended it: "), task.note
            return f"{task.status} {status.sandbox_failure if status is not None else None}"
        await anyio.sleep(0.05)
    return "running"


@pytest.mark.parametrize("persistent", [True, False])
def test_a_running_command_ends_when_its_zygote_is_replaced_for_a_denied_path(
    tmp_path: Path, persistent: bool
) -> None:
    """Failed before (root 2 of 2, uid 65534 2 of 2; one bwrap per command: fixed in a second step):
    the background task still ran 10 s after the next command, reading the file the host wrote.
    (What it read in the window it keeps.)"""
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    policy = SandboxPolicy(workspace=ws, read_denied=(ws / ".env",))

    async def main() -> tuple[str, str, str]:
        backend = BwrapBackend(BwrapConfig(persistent=persistent), policy)
        async with supervised(backend, tmp_path / "s") as sup:
            assert (backend._zygote is not None) == persistent, (
                "the session sandbox must run under its zygote here"
            )
            task = await sup.start_background(_WAITER, description="waits for .env")
            await anyio.sleep(0.3)  # it runs in the current zygote
            (ws / ".env").write_text("HOST-SECRET\n")  # the host writes a secret
            after = await sup.run("cat .env 2>&1; echo next", timeout_s=60)  # the zygote replaced
            ended = await _ended(sup, task.id, 10)
            also = await sup.run("echo still", timeout_s=60)  # the session goes on
            return after.preview, ended, also.preview

    after, ended, also = anyio.run(main)
    assert "HOST-SECRET" not in after and after.endswith("next\n"), after  # held before too
    assert ended.startswith(("killed ", "failed ")) and "read-denied path" in ended and "run the" in ended, (
        ended
    )
    assert also == "still\n", also


@pytest.mark.parametrize("persistent", [True, False])
def test_a_running_command_ends_when_a_host_socket_listens_in_the_workspace(
    tmp_path: Path, persistent: bool
) -> None:
    """Failed before (root 2 of 2, uid 65534 2 of 2; per command fixed in a second step): the task
    still ran after the next command. (A
    socket elsewhere on the host still leaves its commands running: any host process makes those.)"""
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    server = socket.socket(socket.AF_UNIX)
    waiter = (
        "while :; do python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); "
        's.connect("host.sock"); print("CONNECTED")\' 2>/dev/null; sleep 0.1; done'
    )

    async def main() -> tuple[str, str]:
        backend = BwrapBackend(BwrapConfig(persistent=persistent), SandboxPolicy(workspace=ws))
        async with supervised(backend, tmp_path / "s") as sup:
            assert (backend._zygote is not None) == persistent, (
                "the session sandbox must run under its zygote"
            )
            task = await sup.start_background(waiter, description="waits for host.sock")
            await anyio.sleep(0.3)
            server.bind(str(ws / "host.sock"))  # a host daemon starts listening in the workspace
            server.listen(8)
            after = await sup.run("test -S host.sock && echo shown; echo next", timeout_s=60)
            return after.preview, await _ended(sup, task.id, 10)

    try:
        after, ended = anyio.run(main)
    finally:
        server.close()
    assert after == "next\n", after  # covered for the next command (held before too)
    assert ended.startswith(("killed ", "failed ")) and "host socket" in ended, ended


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(
        __file__,
        "test_a_running_command_ends_when_its_zygote_is_replaced_for_a_denied_path",
        "test_a_running_command_ends_when_a_host_socket_listens_in_the_workspace",
    )
