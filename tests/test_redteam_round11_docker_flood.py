"""Red team round 11, docker: a flood of events on the executor's channel grew host memory without end.

The host files every event line the executor sends in a mailbox keyed by (kind, id) until a waiter
takes it. The image's ``/bin/sh`` writes that channel: events for ids nobody asked for (``P <n>``,
a million distinct ones a second) were all kept, for the whole session. The mailbox now holds at
most `MAX_PENDING_EVENTS` (65,536) events; past that the channel closes and the start or the
command fails with an error that says why. docker's frame headers are also no longer trusted to
size a buffer: a payload is handed on as it arrives.

Real containers of locally built images (FAIL, not skip, under CI=true).
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from sandbox import BackendUnavailableError, ExecRequest, SandboxExecError
from sandbox.docker import DockerBackend
from sandbox.docker._channel import MAX_PENDING_EVENTS, FrameDecoder
from tests._docker_support import config, policy
from tests._rt11_hostile import build_hostile

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

_FLOOD = 'i=0; while [ "$i" -lt 70000 ]; do echo "P f$i"; i=$((i + 1)); done'


async def test_a_flood_before_the_hello_fails_the_start(tmp_path: Path) -> None:
    image = build_hostile("shellrt-test-rt11-flood-start", pre=_FLOOD)
    backend = DockerBackend(config(image), policy(tmp_path))
    try:
        with pytest.raises(BackendUnavailableError, match="more than 65,536 events") as caught:
            await backend.start()
    finally:
        await backend.close()
    assert "plain POSIX shell" in str(caught.value)


async def test_a_flood_during_a_command_fails_the_session_closed(tmp_path: Path) -> None:
    # On each command's start the image floods first, then tells the truth.
    filt = 'case $l in "S "*) ' + _FLOOD + ' ;; esac\nprintf "%s\\n" "$l"'
    image = build_hostile("shellrt-test-rt11-flood-run", filter=filt)
    async with DockerBackend(config(image), policy(tmp_path)) as backend:
        with pytest.raises(SandboxExecError, match="more than 65,536 events"):
            await backend.exec(ExecRequest(argv=("true",), cwd="/workspace"))
        session = backend._session
        assert session is not None and not session.alive
        assert len(session.channel._mail) <= MAX_PENDING_EVENTS


def test_a_frame_header_never_sizes_a_buffer() -> None:
    decoder = FrameDecoder()
    # A header announcing 4 GiB, then a line: the line comes out at once, nothing waits for the rest.
    assert decoder.feed(b"\x01\x00\x00\x00" + struct.pack(">I", 0xFFFFFFFF) + b"P x\n") == [(1, b"P x\n")]
    assert decoder.feed(b"P y\n") == [(1, b"P y\n")]
    # Whole frames split anywhere still decode to the same bytes.
    decoder = FrameDecoder()
    stream = b"".join(
        b"%c\x00\x00\x00" % k + struct.pack(">I", len(p)) + p
        for k, p in ((1, b"H 2 9 1 /bin/sh\n"), (2, b"oops"), (1, b"S a 12\n"))
    )
    got: list[tuple[int, bytes]] = []
    for i in range(len(stream)):
        got += decoder.feed(stream[i : i + 1])
    joined: dict[int, bytes] = {1: b"", 2: b""}
    for kind, piece in got:
        joined[kind] += piece
    assert joined == {1: b"H 2 9 1 /bin/sh\nS a 12\n", 2: b"oops"}
