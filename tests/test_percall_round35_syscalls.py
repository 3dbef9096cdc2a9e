"""Round 35, issue 22 item 2: system calls a quick command no longer makes, its guarantees kept.

On this machine a system call costs ~1.4 us hot (``getpid``) and several times that after the
loop thread slept through the command, so a call's CPU follows how many it makes. These count
them (robust at any load, unlike timing) and check that what they guarded still holds:

- the fast pump's window waits for the pipe before its first read (a command just started has
  written nothing: the read was one EAGAIN and its exception per call), and still reads every
  byte up to EOF, or what came before its deadline;
- an inline protected-files check polls inotify once, not twice (`may_be_slow` drained the
  queue in the same step), and still reverts a plant.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import anyio
import pytest

from sandbox._fdstream import FdReceiveStream
from shellrt.supervisor import _inotify, protect
from shellrt.supervisor.execution import _pipe_to_eof_within
from shellrt.supervisor.protect import CommandGuard, WorkspaceGuard
from shellrt.supervisor.spool import OutputSpool

pytestmark = pytest.mark.anyio


async def test_the_window_reads_once_the_pipe_is_readable_and_loses_nothing(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    stream, spool = FdReceiveStream(read_end), OutputSpool(tmp_path / "out")
    reads: list[object] = []
    plain = stream.receive_nowait

    def counted(max_bytes: int = 65536) -> bytes | None:
        try:
            data = plain(max_bytes)
        except anyio.EndOfStream:
            reads.append("EOF")
            raise
        reads.append(data)
        return data

    stream.receive_nowait = counted  # type: ignore[method-assign]
    loop = asyncio.get_running_loop()

    async def writer() -> None:
        await anyio.sleep(0.02)  # the command starts and runs a little before it writes
        os.write(write_end, b"out")
        os.close(write_end)

    async with anyio.create_task_group() as tg:
        tg.start_soon(writer)
        assert await _pipe_to_eof_within(loop, stream, spool, 5.0)
    assert spool.preview()[0] == "out"
    assert reads == [b"out", "EOF"], reads  # no read before there was something to read

    # A window that ends first still says so, and the next one gets what came later.
    read_end, write_end = os.pipe()
    stream, spool = FdReceiveStream(read_end), OutputSpool(tmp_path / "out2")
    assert not await _pipe_to_eof_within(loop, stream, spool, 0.02)
    os.write(write_end, b"late")
    os.close(write_end)
    assert await _pipe_to_eof_within(loop, stream, spool, 5.0)
    assert spool.preview()[0] == "late"
    await stream.aclose()


async def test_an_inline_check_polls_inotify_once_and_still_reverts_a_plant(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHELLRT_HOME", str(tmp_path / "state"))
    monkeypatch.setattr(protect, "INLINE_SCAN_S", 60.0)  # inline whatever the load
    ws, session = tmp_path / "ws", tmp_path / "session"
    ws.mkdir()
    session.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    guard = CommandGuard(WorkspaceGuard(ws, session))
    try:
        await guard.before(False)
        assert await guard.after(False) == ()  # the baseline
        polls = 0
        plain = _inotify.Inotify._pending

        def counted(self: _inotify.Inotify) -> bool:
            nonlocal polls
            polls += 1
            return plain(self)

        monkeypatch.setattr(_inotify.Inotify, "_pending", counted)
        await guard.before(False)
        assert await guard.after(False) == ()
        assert polls == 2, polls  # one poll a check (two before round 35)

        await guard.before(False)
        hook = ws / ".git" / "hooks" / "pre-commit"
        hook.write_text("#!/bin/sh\necho planted\n")
        hook.chmod(0o755)
        notes = await guard.after(False)
        assert not hook.exists()
        assert any("pre-commit" in note for note in notes), notes
    finally:
        await guard.final()
