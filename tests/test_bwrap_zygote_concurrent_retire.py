"""Commands started side by side when the session's zygote must be replaced replace it once.

Found while measuring round 13: five read-only ``git status`` in one message on bwrap failed about
one message in fifteen with ``BusyResourceError: Another task is already reading from this
resource``. Every concurrent ``exec`` saw that a new host socket retires the zygote, and each
called ``retire()`` on it (two tasks waiting on one socket) and then started a zygote of its own.
The check and the replacement are now one step under a lock: the others wait and use the new
zygote. FAILS, not skips, under CI=true.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from sandbox.bwrap import BwrapBackend
from shellrt.supervisor import Supervisor
from tests._bwrap_session import zygote_session

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
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(str(tmp_path / "ws" / f"s{round_}.sock"))  # a socket commands could reach
            listener.listen()
            held.append(listener)
            codes: list[int | None] = []
            errors: list[BaseException] = []

            async def one(codes: list[int | None] = codes, errors: list[BaseException] = errors) -> None:
                try:
                    codes.append((await sup.run("echo ok", timeout_s=30)).exit_code)
                except Exception as exc:  # the failure under test
                    errors.append(exc)

            before = len(starts)
            async with anyio.create_task_group() as tg:
                for _ in range(5):
                    tg.start_soon(one)
            assert not errors, errors
            assert codes == [0] * 5, codes
            assert len(starts) - before <= 1, f"round {round_}: {len(starts) - before} zygotes started"
    finally:
        for listener in held:
            listener.close()
