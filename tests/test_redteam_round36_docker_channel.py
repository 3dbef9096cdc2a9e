"""Red team round 36, docker: long event lines on the executor's channel held the host's memory.

The image's ``/bin/sh`` interprets the executor and writes every line the host reads on the
control channel. Round 11 bounded how many events nobody asked for the host keeps (65,536), not
their size: each could be a 1 MiB line, and the host kept it twice more (its ``rest`` and every
space-separated field as its own string). A line of ``ab ab ab ...`` cost ~25 MB of the host's
memory, so a few hundred such events, sent before the hello, took gigabytes of the host process
(65,536 of them: terabytes). The honest executor's lines are each one ``write`` below
``PIPE_BUF`` (4,096 bytes): a longer one is now dropped as noise, an event's fields are split only
when read, and the events filed and not yet taken hold at most `MAX_PENDING_BYTES` (past it the
session fails closed, as past `MAX_PENDING_EVENTS`).

Real containers of a hostile image built from busybox (FAIL, not skip, under CI=true).
"""

from __future__ import annotations

import contextlib
import socket
import struct
import tracemalloc
from pathlib import Path

import anyio
import pytest

from sandbox import BackendUnavailableError, ExecRequest, SandboxError
from sandbox.docker import DockerBackend, _channel, _protocol
from sandbox.docker._protocol import LineSplitter, parse_event
from tests._docker_support import config, policy, run_sh
from tests._rt11_hostile import build_hostile

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

#: Eight events of ~1,000,000 bytes (under round 6's 1 MiB runaway cut), 333,000 fields each.
_BIG = (
    'i=0; while [ "$i" -lt 8 ]; do printf "P big$i "; yes ab | head -c 999000 | tr "\\n" " "; echo; '
    "i=$((i + 1)); done"
)
#: 6,000 events of ~4,000 bytes each (under PIPE_BUF, like an honest line): 24 MB in all.
_MANY = (
    'pad=$(head -c 3990 /dev/zero | tr "\\0" a); i=0; while [ "$i" -lt 6000 ]; do echo "P m$i $pad"; '
    "i=$((i + 1)); done"
)
_HERE = ("*/sandbox/docker/_protocol.py", "*/sandbox/docker/_channel.py")


def _held_by_channel(snapshot: tracemalloc.Snapshot) -> int:
    """Bytes still allocated by the channel's own code (its lines, events and mailbox)."""
    kept = snapshot.filter_traces([tracemalloc.Filter(True, pattern) for pattern in _HERE])
    return sum(stat.size for stat in kept.statistics("filename"))


async def test_long_event_lines_hold_no_host_memory(tmp_path: Path) -> None:
    image = build_hostile("shellrt-test-rt36-longlines", pre=_BIG)
    tracemalloc.start()
    try:
        async with DockerBackend(config(image), policy(tmp_path)) as backend:
            held = _held_by_channel(tracemalloc.take_snapshot())
            tracemalloc.stop()
            assert held < 1 << 20, f"the channel holds {held:,} bytes after 8 forged long lines"
            # The session works: the long lines were noise, nothing more (the command's `sh` is the
            # same hostile wrapper: its output starts with the same lines, on the command's stdout).
            code, out = await run_sh(backend, "echo ok")
            assert (code, out[-4:]) == (0, "\nok\n")
    finally:
        tracemalloc.stop()


async def test_many_medium_events_fail_the_start_closed(tmp_path: Path) -> None:
    image = build_hostile("shellrt-test-rt36-manylines", pre=_MANY)
    backend = DockerBackend(config(image), policy(tmp_path))
    try:
        with pytest.raises(BackendUnavailableError, match="MiB of events nobody asked for") as caught:
            await backend.start()
    finally:
        await backend.close()
    assert "plain POSIX shell" in str(caught.value)


def test_a_whole_long_line_in_one_read_is_dropped() -> None:
    # A complete line longer than the cut, arriving in one piece, was returned whole.
    split = LineSplitter(max_line=10)
    assert split.feed(b"X " + b"a" * 50 + b" 0 0 /w\nP 1\n") == ["P 1"]
    assert _protocol.EVENT_LINE_MAX == 4096
    # Above every honest line: an exit's cwd is at most 1,000 bytes (C locale); 999 4-byte characters fit too.
    honest = "X " + "a" * 24 + " 255 1 /" + "\U0001f600" * 999
    assert len(honest.encode()) < _protocol.EVENT_LINE_MAX
    assert LineSplitter(_protocol.EVENT_LINE_MAX).feed(honest.encode() + b"\n") == [honest]


def test_an_event_splits_its_fields_only_when_read() -> None:
    event = parse_event("P x " + "ab " * 1000)
    assert event is not None
    assert not hasattr(event, "__dict__") and "fields" not in type(event).__slots__
    assert len(event.fields) == 1001 and event.fields[0] == "ab"
    assert _channel.MAX_PENDING_BYTES <= 16 << 20


#: Noise on the channel (lines that are no event) for ~4 s, beside the real executor.
_NOISE = "timeout 4 yes n &"


async def _longest_gap(during: float) -> float:
    """The longest the event loop went without running this task, ticking every 10 ms for ``during`` s."""
    longest, last = 0.0, anyio.current_time()
    end = last + during
    while anyio.current_time() < end:
        await anyio.sleep(0.01)
        now = anyio.current_time()
        longest, last = max(longest, now - last), now
    return longest


async def test_noise_on_the_channel_never_stalls_the_host_loop(tmp_path: Path) -> None:
    image = build_hostile("shellrt-test-rt36-noise", pre=_NOISE)
    gaps: list[float] = []

    async def watch() -> None:
        gaps.append(await _longest_gap(6.0))

    async with anyio.create_task_group() as tg:
        tg.start_soon(watch)
        backend = DockerBackend(config(image), policy(tmp_path))
        try:
            # The session may fail closed on the noise (`MAX_NOISE_BYTES`): what counts is the loop.
            with anyio.move_on_after(8), contextlib.suppress(SandboxError):
                await backend.start()
                await (await backend.exec(ExecRequest(argv=("sleep", "5"), cwd="/workspace"))).wait()
        finally:
            await backend.close()
    # Before the fix the loop stood still for the whole flood: 5.3 s of 4 s of noise (7.0 s at load ~20);
    # with it, 0.36 s at load ~20. 3 s (round 49's floor for a wall-clock bound) still catches that.
    assert gaps and gaps[0] < 3.0, f"the host's event loop stalled {gaps[0]:.1f}s reading channel noise"


def _frame(payload: bytes) -> bytes:
    return b"\x01\x00\x00\x00" + struct.pack(">I", len(payload)) + payload


async def test_a_channel_full_of_noise_fails_closed() -> None:
    host, image = socket.socketpair()
    channel = _channel.ControlChannel(host.detach())
    chunk = _frame(b"noise\n" * 10_000) + _frame(b"x" * 60_000)  # lines that are no event, a runaway one
    total = _channel.MAX_NOISE_BYTES + 2 * len(chunk)

    def flood() -> None:
        sent = 0
        with contextlib.suppress(OSError):
            while sent < total:
                image.sendall(chunk)
                sent += len(chunk)
            image.sendall(_frame(b"P x\n"))

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(anyio.to_thread.run_sync, flood)
            with pytest.raises(_channel.ExecutorGoneError, match="MiB that were no event"):
                await channel.wait("P", "x", within=60)
            image.close()
    finally:
        channel.close()
