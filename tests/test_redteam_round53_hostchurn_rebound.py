"""A host socket removed and bound again at its path never makes a bwrap start fail (round 53, hostchurn).

A socket listed for masking (``--ro-bind /dev/null <socket>``) that a host program removes and binds
again at the same path (a daemon's restart, a test suite's server, a language server) can be missing
just when bwrap covers it -- bwrap fails before the command: "Can't create file at <socket>: Read-only
file system", or "Can't bind mount /oldroot/dev/null on /newroot<socket>: Unable to find ..." -- and be
there again when shellrt judges the failure. `sandbox._hostsockets.StartMasks.drop_vanished` then had
nothing to drop and the failure counted as a lost mount race: after `MAX_RETRIES` of them the start
failed (5 of 200 per-command starts while a host process bound 40 sockets again and again; the
start's probe and a zygote's start the same way). Now bwrap's message naming a mask whose socket is
there again is a retry of its own (`StartMasks.rebound`), mask kept, bounded by `REBOUND_RETRIES`.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox import bwrap as bwrap_module
from sandbox._bwrap_retry import MAX_RETRIES
from sandbox._hostsockets import REBOUND_RETRIES, StartMasks
from sandbox.base import ExecRequest, SandboxProcess
from sandbox.bwrap import BwrapBackend
from tests.conftest import require

pytestmark = [pytest.mark.anyio]

#: Attempts that meet the socket gone: more than one start's `MAX_RETRIES` allowed.
LOST = MAX_RETRIES + 2


def _require_bwrap_as_root() -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    require(os.geteuid() == 0, "the test runs as root (one bwrap per command as the sandbox uid)")


class _Daemon:
    """A listening socket at a fixed path in a directory every uid can cross, bound again on demand."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / "daemon.sock"
        self.sock: socket.socket | None = None
        self.bind()

    def bind(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(self.path))
        self.sock.listen()

    def remove(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        self.path.unlink(missing_ok=True)


@pytest.fixture
def daemon() -> Iterator[_Daemon]:
    directory = Path(tempfile.mkdtemp(prefix="shellrt-rebound53-", dir="/var/tmp"))
    directory.chmod(0o755)  # crossable: the sandbox uid's bwrap masks it
    served = _Daemon(directory)
    try:
        yield served
    finally:
        served.remove()
        shutil.rmtree(directory, ignore_errors=True)


def _ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


async def _run(backend: BwrapBackend, ws: Path) -> tuple[int, bytes, str | None]:
    proc = await backend.exec(ExecRequest(argv=("/bin/sh", "-c", "echo ran"), cwd=str(ws), merge_stderr=True))
    out = b"".join([chunk async for chunk in proc.stdout])
    status = await proc.wait()
    return status.exit_code, out, status.sandbox_failure


async def test_a_command_whose_masked_socket_is_bound_again_starts(
    tmp_path: Path, daemon: _Daemon, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first `LOST` attempts each meet the socket gone; it is bound again before each is judged."""
    _require_bwrap_as_root()
    ws = _ws(tmp_path)
    backend = BwrapBackend(BwrapConfig(persistent=False), SandboxPolicy(workspace=ws))
    await backend.start()
    original = backend._spawn_once
    attempts: list[bytes] = []

    async def spawn_once(
        request: ExecRequest, masks: StartMasks, denied: tuple[str | None, ...] | None
    ) -> tuple[SandboxProcess, int]:
        lose = len(attempts) < LOST
        if lose:
            daemon.remove()
        first = await original(request, masks, denied)
        attempts.append(b"")
        if lose:
            with anyio.fail_after(10):
                await first[0].wait()  # bwrap failed on the missing socket
            daemon.bind()  # a new inode at the same path: nothing to drop
        return first

    monkeypatch.setattr(backend, "_spawn_once", spawn_once)
    try:
        assert str(daemon.path) in backend._covered_sockets()[1]  # listed, masked
        code, out, failure = await _run(backend, ws)
    finally:
        await backend.close()
    assert (code, out, failure) == (0, b"ran\n", None), f"after {len(attempts)} attempts: {out!r} {failure}"
    assert len(attempts) == LOST + 1


async def test_the_start_probe_whose_masked_socket_is_bound_again_passes(
    tmp_path: Path, daemon: _Daemon, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`BwrapBackend._probe` (one bwrap at the start, with the real masks): the same race."""
    _require_bwrap_as_root()
    ws = _ws(tmp_path)
    original = bwrap_module._run_probe
    probes: list[bytes] = []

    def run_probe(argv: list[str]) -> subprocess.CompletedProcess[bytes]:
        masked = str(daemon.path) in argv
        lose = masked and len(probes) < LOST
        if lose:
            daemon.remove()
        try:
            result = original(argv)
        finally:
            if lose:
                daemon.bind()
        if masked:
            probes.append(result.stderr)
        return result

    monkeypatch.setattr(bwrap_module, "_run_probe", run_probe)
    backend = BwrapBackend(BwrapConfig(persistent=False), SandboxPolicy(workspace=ws))
    try:
        await backend.start()
        code, out, failure = await _run(backend, ws)
    finally:
        await backend.close()
    assert len(probes) == LOST + 1, probes[:2]
    assert all(b"daemon.sock" in said for said in probes[:LOST]), probes[:2]  # the race was met
    assert (code, out, failure) == (0, b"ran\n", None)


def test_rebound_is_bounded_and_names_a_mask(tmp_path: Path, daemon: _Daemon) -> None:
    """Only a message naming one of the start's masks whose socket is there; `REBOUND_RETRIES` times."""
    masks = StartMasks(["--ro-bind", "/dev/null", str(daemon.path), "--tmpfs", "/run"])
    other = f"bwrap: Can't create file at {daemon.path.parent}/other.sock: Read-only file system".encode()
    assert not masks.rebound(other)
    said = f"bwrap: Can't create file at {daemon.path}: Read-only file system\n".encode()
    found = (
        f'bwrap: Can\'t bind mount /oldroot/dev/null on /newroot{daemon.path}: Unable to find "x"'.encode()
    )
    assert masks.rebound(found)
    assert sum(masks.rebound(said) for _ in range(REBOUND_RETRIES + 5)) == REBOUND_RETRIES - 1
    assert masks.args(None) == ["--ro-bind", "/dev/null", str(daemon.path), "--tmpfs", "/run"]  # kept
    daemon.remove()
    assert not StartMasks(["--ro-bind", "/dev/null", str(daemon.path)]).rebound(said)  # gone: dropped


_CHURN = """
import os, socket, sys, time
paths = [os.path.join(sys.argv[1], "s%d.sock" % i) for i in range(40)]
while True:
    held = []
    for path in paths:
        s = socket.socket(socket.AF_UNIX)
        s.bind(path)
        s.listen()
        held.append(s)
    time.sleep(0.002)
    for s, path in zip(held, paths):
        s.close()
        os.unlink(path)
    time.sleep(0.001)
"""

STARTS = 30


async def test_no_command_fails_while_host_sockets_are_bound_again(tmp_path: Path) -> None:
    """Real churn on another core: 40 sockets at fixed paths bound, removed and bound again."""
    _require_bwrap_as_root()
    ws = _ws(tmp_path)
    directory = Path(tempfile.mkdtemp(prefix="shellrt-churn53-", dir="/var/tmp"))
    directory.chmod(0o755)
    churn = subprocess.Popen([sys.executable, "-c", _CHURN, str(directory)])
    backend = BwrapBackend(BwrapConfig(persistent=False), SandboxPolicy(workspace=ws))
    failures: list[tuple[int, bytes, str | None]] = []
    try:
        deadline = time.monotonic() + 10
        while not (directory / "s0.sock").exists() and time.monotonic() < deadline:
            time.sleep(0.001)
        await backend.start()
        masked = 0
        for _ in range(STARTS):
            masked += any(p.startswith(str(directory)) for p in backend._covered_sockets()[1])
            result = await _run(backend, ws)
            if result[:2] != (0, b"ran\n"):
                failures.append(result)
    finally:
        await backend.close()
        churn.kill()
        churn.wait()
        shutil.rmtree(directory, ignore_errors=True)
    assert masked >= STARTS // 4  # the churned sockets were listed and masked
    assert failures == [], f"{len(failures)} of {STARTS} starts failed: {failures[:2]}"
