"""A docker command's exit event is never lost to a cancellation, and no channel wait is unbounded.

The hang CI saw in the Inspect self-check module (its shared docker sandbox idle, the executor
waiting on stdin, the host idle in its event loop, every later test waiting out pytest's 300 s):
`read_file` over Inspect's read limit stops reading once the limit is passed and cancels the
command's ``wait()``. When the command's ``X`` line arrived in that same moment, the waiter
had already taken it out of the channel's mailbox and the cancellation then dropped it, so
the ``wait()`` that followed (`run_collected`: the status of a command stopped for its output)
waited for an exit that had already been told: for ever, with no timer to end it.

The tests cancel the caller exactly between the event's taking and its use (the channel's
wait is wrapped to cancel its caller as it returns), so the race happens every time.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import pytest

from sandbox import ExecRequest
from sandbox.docker import DockerBackend
from sandbox.docker._channel import ChannelTimeoutError, ControlChannel
from sandbox.docker._process import DockerProcess
from sandbox.docker._protocol import Event
from tests._docker_support import DEBIAN, config, policy, require_docker

pytestmark = pytest.mark.anyio


def _cancel_on_return(
    channel: ControlChannel, kind: str, scope: anyio.CancelScope
) -> Callable[..., Awaitable[Event]]:
    """``channel.wait`` that cancels ``scope`` (its caller's) the moment it returns a ``kind`` event."""
    original = channel.wait

    async def wait(kinds: str, task_id: str, **kw: float | None) -> Event:
        event = await original(kinds, task_id, **kw)
        if kind in kinds:
            scope.cancel()
        return event

    return wait


async def test_an_exit_taken_as_its_waiter_is_cancelled_is_still_the_commands_status(tmp_path: Path) -> None:
    require_docker()
    backend = DockerBackend(config(DEBIAN), policy(tmp_path))
    await backend.start()
    try:
        proc = await backend.exec(ExecRequest(argv=("sh", "-c", "exit 7"), cwd="/workspace"))
        assert isinstance(proc, DockerProcess)
        channel = proc._session.channel
        outer = anyio.CancelScope()
        channel.wait = _cancel_on_return(channel, "X", outer)  # type: ignore[method-assign]
        with outer:
            await proc.wait()
        del channel.wait  # the class's own again
        assert outer.cancelled_caught, "the wait was not cancelled: the test did not make the race"
        with anyio.fail_after(10):  # the old code waited here for ever (X already taken, then dropped)
            status = await proc.wait()
        assert status.exit_code == 7
        assert status.sandbox_failure is None
        # The sandbox goes on: the next command starts and its exit arrives.
        with anyio.fail_after(30):
            after = await backend.exec(ExecRequest(argv=("true",), cwd="/workspace"))
            assert (await after.wait()).exit_code == 0
    finally:
        await backend.close()


async def test_a_reply_that_never_comes_fails_the_wait_with_a_clear_error(tmp_path: Path) -> None:
    """A request whose answer is lost ends its call with an error naming it, within its deadline."""
    require_docker()
    backend = DockerBackend(config(DEBIAN), policy(tmp_path))
    await backend.start()
    try:
        proc = await backend.exec(ExecRequest(argv=("true",), cwd="/workspace"))
        assert isinstance(proc, DockerProcess)
        channel = proc._session.channel
        with anyio.fail_after(10):
            assert (await proc.wait()).exit_code == 0
        # No request asked for it: no such event will ever come.
        with anyio.fail_after(10), pytest.raises(ChannelTimeoutError, match="no 'P' reply"):
            await channel.wait("P", "never-asked", within=0.5)
        assert not channel.closed  # a late reply is not a broken channel
    finally:
        await backend.close()
