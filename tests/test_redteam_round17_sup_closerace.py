"""Red team, round 17: a command whose start overlaps `Supervisor.close` does not outlive the close.

`Supervisor.close` kills the running background tasks, then the running commands it knows. A
command whose start had passed the "closed?" check but whose backend ``exec`` had not returned yet
was known to neither list: it was registered after the kill pass and ran on, and
`start_background` even reported it as a RUNNING task of a closed session. Where the backend
outlives the supervisor (a caller's own backend; batch workers' pooled docker containers, served
to the next task) nothing killed it. Probed on docker before: 1 of 12 random close timings left a
``sleep 30`` running with the backend open.

The backend here is the real local backend whose ``exec`` takes a while to return after the
process is spawned, as docker's does under load (the window made wide, not simulated: the process
is real and the test looks for it in /proc by a marker in its argv).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import anyio
import pytest

from sandbox import ExecRequest, SandboxPolicy
from sandbox.local import LocalBackend
from shellrt.supervisor import Supervisor, SupervisorClosedError

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class _SlowReturn(LocalBackend):
    """A local backend whose ``exec`` returns 0.3 s after the command shows ``tag`` in its argv."""

    def __init__(self, policy: SandboxPolicy, tag: str) -> None:
        super().__init__(policy=policy)
        self.tag = tag
        self.spawned = anyio.Event()

    async def exec(self, request: ExecRequest):  # type: ignore[no-untyped-def]
        handle = await super().exec(request)
        with anyio.move_on_after(15):  # the shell's exec of the tagged sleep, on a loaded machine
            while not _running(self.tag):
                await anyio.sleep(0.02)
        self.spawned.set()
        await anyio.sleep(0.3)
        return handle


def _running(tag: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as fh:
                    argv = fh.read()
                with open(f"/proc/{entry}/stat", "rb") as fh:
                    state = fh.read().rsplit(b")", 1)[1].split()[0]
            except OSError:
                continue
            if tag.encode() in argv and state != b"Z":
                found.append(int(entry))
    return found


@pytest.mark.parametrize("background", [False, True], ids=["foreground", "background"])
async def test_a_command_starting_while_the_session_closes_is_killed_by_the_close(
    tmp_path: Path, background: bool
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    tag = "rt17close" + secrets.token_hex(4)
    backend = _SlowReturn(SandboxPolicy(workspace=ws), tag)
    command = f"exec -a {tag} sleep 30"
    outcome: list[object] = []
    async with backend:
        sup = Supervisor(backend, session_dir=tmp_path / "session")

        async def start() -> None:
            try:
                if background:
                    outcome.append(await sup.start_background(command))
                else:
                    outcome.append(await sup.run(command, timeout_s=60))
            except SupervisorClosedError as exc:
                outcome.append(exc)

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(start)
                with anyio.fail_after(20):
                    await backend.spawned.wait()
                assert _running(tag), "the command did not start"
                await sup.close()
                # The backend is still open (as a pooled container is): nothing of the session
                # may run, whether or not its start has returned yet (2 s: a SIGKILL's delivery).
                with anyio.move_on_after(2):
                    while _running(tag):
                        await anyio.sleep(0.05)
                left = _running(tag)
                tg.cancel_scope.cancel()
        finally:
            for pid in _running(tag):
                os.kill(pid, 9)
    assert not left, f"still running after the session closed: pids {left} ({outcome})"
    if background:
        (got,) = outcome
        assert isinstance(got, SupervisorClosedError), f"a closed session reported a task: {got!r}"
