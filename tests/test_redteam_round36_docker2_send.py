"""Red team round 36, docker2: a request the executor never reads held its session for ever.

Requests go to the executor's stdin over the attach connection. The image's ``/bin/sh`` runs the
executor, and one that never reads its stdin lets the attach buffers (the container's stdin pipe,
the daemon's copy, the socket) fill: every later write by the host waited for room that never
came. An exec's ``R`` was sent before its start deadline began, a reset's ``Z`` and a kill's ``K``
only under their callers' deadlines, and the channel's send lock made every other request of the
session wait behind the stalled one: the session hung (an ``exec`` never returned) instead of
failing. And a send cancelled halfway through its line (a kill's grace ending) left half a line
on the stream, to which the next request was glued.

Now every write to the container has a deadline of its own (`SEND_TIMEOUT`): past it, or when a
send is cut off after part of its line went out, the channel fails closed, saying what to do,
and an exec is not retried on a new container of the same image (it would only stall again).

Two tests need no daemon (a socketpair whose peer never reads); one runs a real container of a
hostile busybox image (FAIL, not skip, under CI=true).
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import anyio
import pytest

from sandbox import ExecRequest, SandboxError
from sandbox.docker import DockerBackend, _channel
from tests._docker_support import config, policy
from tests._rt11_hostile import build_hostile

pytestmark = [pytest.mark.anyio]

#: The executor reads a FIFO nobody writes; the container's stdin stays open (fd 9), never read.
_DEAF = "mkfifo /tmp/.deaf && exec 9<&0 0<>/tmp/.deaf"


def _fill(fd: int) -> int:
    """Write to ``fd`` (non-blocking) until nothing more fits; bytes written."""
    total = 0
    chunk = b"x" * 65536
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            total += os.write(fd, chunk)
        except BlockingIOError:
            time.sleep(0.2)  # the daemon may still be draining into the container's pipe
            try:
                total += os.write(fd, chunk)
            except BlockingIOError:
                return total
    raise AssertionError(f"the channel still took bytes after 30s ({total:,} written)")


async def test_a_send_nobody_reads_fails_closed_within_its_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_channel, "SEND_TIMEOUT", 1.0, raising=False)
    ours, theirs = socket.socketpair()
    try:
        channel = _channel.ControlChannel(os.dup(ours.fileno()))
        _fill(ours.fileno())
        started = time.monotonic()
        with anyio.fail_after(10):
            with pytest.raises(_channel.ExecutorGoneError, match="did not read"):
                await channel.send("R abc -")
        took = time.monotonic() - started
        # ~1.0 s idle (SEND_TIMEOUT); one blind to it waits for fail_after's 10 s. Round 49: < 8, not < 5.
        assert 0.9 < took < 8, f"the stalled send failed after {took:.1f}s"
        assert channel.closed and channel.failure is not None and "POSIX shell" in channel.failure
        # Every later request fails at once, none waits behind the stalled one: one that waited
        # would wait its own send deadline, made 60 s here, so a 20 s ceiling tells them apart on a
        # loaded lane (2 s was under the 3 s floor, and a 1 s wait passed it).
        monkeypatch.setattr(_channel, "SEND_TIMEOUT", 60.0, raising=False)
        with anyio.fail_after(20), pytest.raises(_channel.ExecutorGoneError):
            await channel.send("K abc 12")
    finally:
        ours.close()
        theirs.close()


async def test_a_send_cut_off_mid_line_closes_the_channel() -> None:
    ours, theirs = socket.socketpair()
    try:
        channel = _channel.ControlChannel(os.dup(ours.fileno()))
        _fill(ours.fileno())
        theirs.setblocking(False)
        with anyio.move_on_after(0.3):
            # Room for part of the line only: free a little while the send waits.
            async with anyio.create_task_group() as tg:

                async def drain_a_little() -> None:
                    await anyio.sleep(0.1)
                    for _ in range(4):
                        theirs.recv(65536)

                tg.start_soon(drain_a_little)
                await channel.send("K " + "a" * 1_000_000)
        assert channel.closed, "half a request is on the stream: the next one would be glued to it"
    finally:
        ours.close()
        theirs.close()


@pytest.mark.docker
async def test_an_image_that_never_reads_fails_the_exec_not_hangs(tmp_path: Path) -> None:
    image = build_hostile("shellrt-test-rt36-deaf", pre=_DEAF)
    async with DockerBackend(config(image), policy(tmp_path)) as backend:
        session = backend._session
        assert session is not None
        fd = session.channel._fd
        assert fd is not None
        filled = _fill(fd)
        limit = getattr(_channel, "SEND_TIMEOUT", 10.0)
        started = time.monotonic()
        with anyio.fail_after(limit + 30), pytest.raises(SandboxError, match="did not read") as caught:
            await backend.exec(ExecRequest(argv=("true",), cwd="/"))
        took = time.monotonic() - started
        assert took < limit + 5, f"the exec failed after {took:.1f}s ({filled:,} bytes filled)"
        assert "plain POSIX shell" in str(caught.value)
