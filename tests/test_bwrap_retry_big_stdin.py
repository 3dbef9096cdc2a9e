"""A per-command bwrap start that lost a race is retried whatever the size of its stdin.

A failed attempt never read its stdin, so a retry used to need all of it kept (one pipe's worth,
64 KiB); a command given more was not retried and failed with bwrap's message (CI3 of stop 38:
3 MB of stdin, and a socket of another test gone from /var/tmp before bwrap covered it). Now
stdin past that bound waits until the attempt is past its set-up (bwrap read its seccomp program).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.base import ExecRequest
from sandbox.bwrap import BwrapBackend
from tests.conftest import require

pytestmark = [pytest.mark.anyio, pytest.mark.bwrap]

_BIG = 3 << 20


async def _run(backend: BwrapBackend, ws: Path, data: bytes) -> tuple[int, bytes]:
    request = ExecRequest(argv=("/bin/sh", "-c", "wc -c"), cwd=str(ws), merge_stderr=True, stdin=True)
    proc = await backend.exec(request)
    chunks: list[bytes] = []

    async def feed() -> None:
        assert proc.stdin is not None
        try:
            await proc.stdin.send(data)
        except anyio.BrokenResourceError:
            pass  # the failed start's pipe: the old behaviour, judged by the output below
        await proc.stdin.aclose()

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            tg.start_soon(feed)
            try:
                while True:
                    chunks.append(await proc.stdout.receive())
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                pass
        status = await proc.wait()
    return status.exit_code, b"".join(chunks)


@pytest.mark.parametrize("size", [1000, _BIG], ids=["small", "3MB"])
async def test_a_start_that_lost_a_race_is_retried_with_all_its_stdin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: int
) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    ws = tmp_path / "ws"
    ws.mkdir()
    # Never made: as if removed right after listing; under /var/tmp, read-only in the sandbox, so
    # bwrap can make neither the mount point nor its parents ("Can't mkdir parents for ...").
    gone = f"/var/tmp/shellrt-test-gone-{os.getpid()}-{size}/agent.sock"
    original = BwrapBackend.bwrap_args
    calls = 0

    def listing_a_vanished_socket(self: BwrapBackend, **kwargs: object) -> list[str]:
        nonlocal calls
        args = original(self, **kwargs)  # type: ignore[arg-type]
        if kwargs.get("seccomp_fd") is None:
            return args  # the backend's start-up probe, not a command's start
        calls += 1
        if calls == 1:
            at = args.index("--chdir")  # after `--ro-bind / /` and the other masks
            args[at:at] = ["--ro-bind", "/dev/null", gone]
        return args

    monkeypatch.setattr(BwrapBackend, "bwrap_args", listing_a_vanished_socket)
    backend = BwrapBackend(BwrapConfig(persistent=False), SandboxPolicy(workspace=ws))
    await backend.start()
    try:
        code, out = await _run(backend, ws, b"x" * size)
    finally:
        await backend.close()
    assert (code, out.strip()) == (0, str(size).encode()), out[:300]
    assert calls >= 2, "the failed start was not retried"
