"""The bwrap mount-race retry wrapper, with fake attempts (no bwrap needed)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from sandbox._bwrap_retry import RetryingBwrapProcess
from tests._bwrap_fakes import fake_attempt as _attempt
from tests._bwrap_fakes import read_all

pytestmark = pytest.mark.anyio


async def test_mount_race_is_retried_and_its_output_hidden() -> None:
    race = b"bwrap: Can't bind mount /oldroot/ on /newroot/: Unable to apply mount flags\n"
    second = _attempt([b"hello\n"], 0, b'{"exit-code": 0}')
    spawned: list[int] = []

    async def spawn() -> Any:
        spawned.append(1)
        return second

    proc = RetryingBwrapProcess(spawn, _attempt([race], 1, b""), may_retry=True)
    assert await read_all(proc) == b"hello\n"
    assert (await proc.wait()).exit_code == 0 and spawned == [1]


async def test_a_cancelled_receive_loses_no_held_chunk() -> None:
    gate = anyio.Event()
    message = b"bwrap: some other failure\n"
    proc = RetryingBwrapProcess(_never_spawn, _attempt([message], 1, b"", gate), may_retry=True)
    with anyio.move_on_after(0.05):
        await proc.stdout.receive()  # held until the attempt settles, which waits for the exit
    gate.set()
    assert await read_all(proc) == message
    assert (await proc.wait()).exit_code == 1


async def _never_spawn() -> Any:
    raise AssertionError("not a mount race: no retry")


@pytest.mark.parametrize(
    "said",
    [
        b"bwrap: Can't create file at /var/tmp/x/agent.sock: Read-only file system\n",
        b"bwrap: Can't mkdir parents for /run/gone/app.sock: Read-only file system\n",
    ],
)
async def test_a_mask_whose_socket_vanished_is_retried(said: bytes) -> None:
    """A host socket listed for masking went away before bwrap covered it: the command never ran."""
    second = _attempt([b"hello\n"], 0, b'{"exit-code": 0}')

    async def spawn() -> Any:
        return second

    proc = RetryingBwrapProcess(spawn, _attempt([said], 1, b""), may_retry=True)
    assert await read_all(proc) == b"hello\n"
    assert (await proc.wait()).exit_code == 0


async def test_the_same_message_from_the_command_itself_is_not_retried() -> None:
    """The json status says the command ran: its own output is never a reason to start it again."""
    said = b"bwrap: Can't create file at /x: Read-only file system\n"
    spawned: list[int] = []

    async def spawn() -> Any:
        spawned.append(1)
        return _attempt([b"again\n"], 0, b'{"exit-code": 0}')

    proc = RetryingBwrapProcess(spawn, _attempt([said], 1, b'{"exit-code": 1}'), may_retry=True)
    assert await read_all(proc) == said
    assert (await proc.wait()).exit_code == 1 and spawned == []
