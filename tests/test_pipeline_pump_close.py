"""The fast pump closes a pipe's stream without a shield scope (`shellrt.supervisor.execution`):
that is only sound while `FdReceiveStream.aclose` awaits nothing, which these tests hold it to,
and the readers' event is made only when something waits for it."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from sandbox import LocalConfig, SandboxPolicy
from sandbox._fdstream import FdReceiveStream
from sandbox.local import LocalBackend
from shellrt.supervisor import Supervisor


@pytest.mark.anyio
async def test_a_pipe_stream_closes_without_suspending() -> None:
    """Driven by hand, the close coroutine finishes at its first step: no await inside it
    gives a cancellation a place to stop it with the descriptor still open."""
    r, w = os.pipe()
    stream = FdReceiveStream(r)
    closing = stream.aclose()
    with pytest.raises(StopIteration):
        closing.send(None)
    assert stream.fileno() is None
    with pytest.raises(OSError):
        os.fstat(r)
    os.close(w)


def _pipes() -> set[str]:
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:"):
                found.add(fd)
        except OSError:
            continue  # listdir's own descriptor, closed meanwhile
    return found


@pytest.mark.anyio
async def test_a_cancelled_quick_command_leaves_no_pipe_open(tmp_path: Path) -> None:
    """Cancelling callers mid-command, many times: every pipe the pumps opened is closed."""
    ws = tmp_path / "ws"
    ws.mkdir()
    # No pre-spawned shell: its pipes (open while it waits, replaced as shapes change) are not the pumps'.
    backend = LocalBackend(LocalConfig(warm_shells=0), policy=SandboxPolicy(workspace=ws))
    async with backend, Supervisor(backend, session_dir=tmp_path / "session") as sup:
        await sup.run("true", timeout_s=10)
        before = _pipes()
        for i in range(20):
            with anyio.move_on_after(0.001 * (i % 5)):
                await sup.run("printf x; sleep 0.01; printf y", timeout_s=10)
        result = await sup.run("printf done", timeout_s=10)
        assert result.preview == "done"
        assert result.exit_code == 0
        # Until the detached pumps of the cancelled commands finish (a fixed 0.2 s is a guess a
        # busy machine can outlast); pumps that never close their pipes still fail at 20 s.
        with anyio.move_on_after(20):
            while _pipes() > before:
                await anyio.sleep(0.05)
        assert _pipes() <= before


@pytest.mark.anyio
async def test_output_after_the_shell_exits_is_still_read(tmp_path: Path) -> None:
    """A command whose output outlives the fast pump's window goes on concurrently: the
    readers' event, made only then, still ends the pump with every byte."""
    ws = tmp_path / "ws"
    ws.mkdir()
    backend = LocalBackend(policy=SandboxPolicy(workspace=ws))
    async with backend, Supervisor(backend, session_dir=tmp_path / "session") as sup:
        result = await sup.run("printf a; sleep 0.1; printf b", timeout_s=10)
        assert result.preview == "ab"
        quick = await sup.run("printf quick", timeout_s=10)
        assert quick.preview == "quick"
