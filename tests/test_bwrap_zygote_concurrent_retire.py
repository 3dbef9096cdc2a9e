"""Commands started side by side when the session's zygote must be replaced replace it once.

Found while measuring round 13: five read-only ``git status`` in one message on bwrap failed about
one message in fifteen with ``BusyResourceError: Another task is already reading from this
resource``. Every concurrent ``exec`` saw that a new host socket retires the zygote, and each
called ``retire()`` on it (two tasks waiting on one socket) and then started a zygote of its own.
The replacement is now one step under a lock: the others wait and use the new zygote. And a
zygote judged stale stays so until replaced (the socket watch reports a change once): a command
started beside the replacing one ran in the old zygote, where the new socket is not masked, and
connected to it. FAILS, not skips, under CI=true.
"""

from __future__ import annotations

import os
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import pytest

from sandbox.bwrap import BwrapBackend
from shellrt.supervisor import Supervisor
from tests._bwrap_session import zygote_session
from tests._reach_scenario import CONNECT, SANDBOX_PYTHON
from tests._unix_sockets import listen_unix, outside_dir
from tests.conftest import require

# Serial: it follows one session's zygotes, which a parallel test's host socket would also replace.
pytestmark = [pytest.mark.anyio, pytest.mark.bwrap, pytest.mark.serial]


@pytest.fixture
async def session(tmp_path: Path) -> AsyncIterator[tuple[BwrapBackend, Supervisor]]:
    async with zygote_session(tmp_path) as made:
        yield made


async def test_side_by_side_commands_replace_the_zygote_once(
    session: tuple[BwrapBackend, Supervisor], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend, sup = session
    assert (await sup.run("true", timeout_s=20)).exit_code == 0
    starts: list[int] = []
    real = BwrapBackend._start_zygote

    async def counting(self: BwrapBackend) -> None:
        starts.append(1)
        await real(self)

    monkeypatch.setattr(BwrapBackend, "_start_zygote", counting)
    held: list[socket.socket] = []
    try:
        for round_ in range(4):
            path = tmp_path / "ws" / f"s{round_}.sock"  # a socket commands could reach
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(str(path))
            listener.listen()
            held.append(listener)
            said: list[str] = []
            errors: list[BaseException] = []

            async def one(said: list[str] = said, errors: list[BaseException] = errors, path: Path = path) -> None:
                try:
                    result = await sup.run([SANDBOX_PYTHON, "-I", "-c", CONNECT, str(path)], timeout_s=30)
                    said.append(result.preview.strip())
                except Exception as exc:  # the failure under test
                    errors.append(exc)

            before = len(starts)
            async with anyio.create_task_group() as tg:
                for _ in range(5):
                    tg.start_soon(one)
            assert not errors, errors
            assert len(said) == 5 and all(s.startswith("REFUSED") for s in said), said
            assert len(starts) - before <= 1, f"round {round_}: {len(starts) - before} zygotes started"
    finally:
        for listener in held:
            listener.close()


@pytest.fixture
def outside() -> Iterator[Path]:
    yield from outside_dir("shellrt-concurrent-")


async def test_side_by_side_commands_do_not_run_in_a_zygote_judged_stale(
    session: tuple[BwrapBackend, Supervisor], outside: Path
) -> None:
    """A socket the sandbox uid could not connect to is opened by a chmod: the watch reports it
    once (inotify). Of five commands started together, the first judged the zygote stale and
    replaced it; the others judged it again, saw no change, and ran in the old zygote, where the
    socket is not masked (they connected; FAILED before: 2 of 5 CONNECTED, 2 timed out)."""
    require(os.geteuid() == 0, "a root caller's case (others run commands as their own uid)")
    backend, sup = session
    assert (await sup.run("true", timeout_s=20)).exit_code == 0
    path = outside / "daemon.sock"
    listener = listen_unix(path)
    try:
        path.chmod(0o755)
        assert (await sup.run("true", timeout_s=20)).exit_code == 0  # seen, judged out of reach
        path.chmod(0o777)
        said: list[str] = []

        async def one() -> None:
            result = await sup.run([SANDBOX_PYTHON, "-I", "-c", CONNECT, str(path)], timeout_s=30)
            said.append(result.preview.strip())

        async with anyio.create_task_group() as tg:
            for _ in range(5):
                tg.start_soon(one)
        assert len(said) == 5 and all(s.startswith("REFUSED") for s in said), said
    finally:
        listener.close()
