"""`SandboxBackend.read_file` / `write_file` on every backend: bytes round-trip, errors by type.

The transfer runs inside the sandbox, so what it can reach is what a command
can reach: bwrap's read-only root and docker's container filesystem refuse
writes with `PermissionError`, and the busybox image works as well as debian.
"""

from __future__ import annotations

import os
import random
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, ExecRequest, LocalConfig, SandboxBackend, SandboxConfig, SandboxPolicy
from sandbox._collect import run_collected
from sandbox.errors import BackendUnavailableError, FileTooLargeError, FileTransferError
from sandbox.factory import create_backend
from tests._docker_support import BUSYBOX, DEBIAN, config, require_docker
from tests.conftest import require

pytestmark = pytest.mark.anyio

BACKENDS = ["local", "bwrap", "docker-debian", "docker-busybox"]


def _config(kind: str) -> SandboxConfig:
    if kind == "local":
        return LocalConfig()
    if kind == "bwrap":
        require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
        return BwrapConfig()
    require_docker()
    return config(DEBIAN if kind == "docker-debian" else BUSYBOX)


@pytest.fixture(params=BACKENDS)
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SandboxBackend]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    b = create_backend(_config(request.param), SandboxPolicy(workspace=workspace))
    try:
        await b.start()
    except BackendUnavailableError as exc:
        require(False, f"{request.param} unusable here: {exc}")
    try:
        yield b
    finally:
        await b.close()


async def _sh(b: SandboxBackend, script: str) -> int:
    proc = await b.exec(
        ExecRequest(argv=("/bin/sh", "-c", script), cwd=b.workspace, env={"PATH": "/usr/bin:/bin"})
    )
    return (await proc.wait()).exit_code


async def test_bytes_round_trip_with_parent_dirs_and_odd_names(backend: SandboxBackend) -> None:
    payload = bytes(range(256)) * 3 + b"\x00\xff"
    await backend.write_file("deep/er/f.bin", payload)
    assert await backend.read_file("deep/er/f.bin") == payload
    await backend.write_file("-n", b"dash")  # would be an option to cat/test without care
    assert await backend.read_file("-n") == b"dash"
    await backend.write_file("with space.txt", b"")
    assert await backend.read_file("with space.txt") == b""
    await backend.write_file("/tmp/shellrt-files-test/abs.txt", b"abs")
    assert await backend.read_file("/tmp/shellrt-files-test/abs.txt") == b"abs"


async def test_write_replaces_an_existing_file(backend: SandboxBackend) -> None:
    await backend.write_file("f", b"first, longer content")
    await backend.write_file("f", b"second")
    assert await backend.read_file("f") == b"second"


async def test_large_file_round_trip(backend: SandboxBackend) -> None:
    payload = b"\xc3" * (20 * 1024 * 1024)
    await backend.write_file("big", payload)
    assert await backend.read_file("big") == payload


async def test_missing_file_and_missing_parent(backend: SandboxBackend) -> None:
    with pytest.raises(FileNotFoundError, match="nope"):
        await backend.read_file("nope")
    with pytest.raises(FileNotFoundError):
        await backend.read_file("no/such/dir/f")


async def test_directories_are_refused_both_ways(backend: SandboxBackend) -> None:
    with pytest.raises(IsADirectoryError, match="directory"):
        await backend.read_file("/etc")
    await backend.write_file("d/inner", b"x")
    with pytest.raises(IsADirectoryError, match="directory"):
        await backend.write_file("d", b"x")


async def test_a_file_on_the_path_is_not_a_directory(backend: SandboxBackend) -> None:
    await backend.write_file("plain", b"x")
    with pytest.raises(NotADirectoryError):
        await backend.read_file("plain/child")
    with pytest.raises(NotADirectoryError):
        await backend.write_file("plain/child/grandchild", b"x")


async def test_size_cap_raises_and_returns_nothing(backend: SandboxBackend) -> None:
    await backend.write_file("f", b"a" * 2048)
    with pytest.raises(FileTooLargeError, match="1024 bytes") as info:
        await backend.read_file("f", max_bytes=1024)
    assert info.value.limit == 1024
    assert await backend.read_file("f", max_bytes=2048) == b"a" * 2048
    # the killed reader left the sandbox usable
    assert await _sh(backend, "true") == 0


async def test_non_regular_files_are_refused_not_read_forever(backend: SandboxBackend) -> None:
    with pytest.raises(FileTransferError, match="not a regular file"):
        await backend.read_file("/dev/zero")


async def test_fifo_is_refused_and_a_stuck_transfer_times_out(backend: SandboxBackend) -> None:
    assert await _sh(backend, "mkfifo fifo") == 0
    with pytest.raises(FileTransferError, match="not a regular file"):
        await backend.read_file("fifo")
    started = anyio.current_time()
    with pytest.raises(TimeoutError):  # what a transfer that hangs gets (here: a command that does)
        await run_collected(
            backend,
            ExecRequest(
                argv=("sh", "-c", "sleep 30; :"), cwd=backend.workspace, env={"PATH": "/usr/bin:/bin"}
            ),
            timeout_s=1,
        )
    assert anyio.current_time() - started < 15
    assert await _sh(backend, "true") == 0


@pytest.mark.parametrize("kind", ["bwrap", "docker-debian"])
async def test_confined_paths_refuse_writes_with_permission_error(kind: str, tmp_path: Path) -> None:
    async with create_backend(_config(kind), SandboxPolicy(workspace=tmp_path)) as b:
        with pytest.raises(PermissionError, match="/usr/shellrt-files-test"):
            await b.write_file("/usr/shellrt-files-test", b"x")
        with pytest.raises(PermissionError, match="/etc/shadow"):
            await b.read_file("/etc/shadow")  # root-only; commands never run as host root
    assert not Path("/usr/shellrt-files-test").exists()


@pytest.mark.parametrize("kind", ["bwrap", "docker-debian"])
async def test_unreadable_and_unwritable_files_raise_permission_error(kind: str, tmp_path: Path) -> None:
    async with create_backend(_config(kind), SandboxPolicy(workspace=tmp_path)) as b:
        await b.write_file("locked", b"secret")
        assert await _sh(b, "chmod 000 locked") == 0
        with pytest.raises(PermissionError, match="locked"):
            await b.read_file("locked")
        with pytest.raises(PermissionError, match="locked"):
            await b.write_file("locked", b"x")


async def test_killing_a_running_command_keeps_a_bwrap_session_usable(tmp_path: Path) -> None:
    """As root the zygote kills a command that already runs as the sandbox uid (CAP_KILL): the
    session must survive that, not end with every other command in it."""
    async with create_backend(_config("bwrap"), SandboxPolicy(workspace=tmp_path)) as b:
        for _ in range(2):
            proc = await b.exec(ExecRequest(argv=("sh", "-c", "echo up; sleep 30"), cwd=str(tmp_path)))
            assert await proc.stdout.receive() == b"up\n"  # the command runs (its init lowered itself)
            with anyio.fail_after(10):
                await proc.kill()
                assert (await proc.wait()).signal == 9
            assert await _sh(b, "true") == 0


async def test_transfers_leave_no_open_descriptors_behind(backend: SandboxBackend) -> None:
    await backend.write_file("f", b"x")
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(20):
        await backend.write_file("f", b"x")
        assert await backend.read_file("f") == b"x"
    # slack for the event loop's and worker threads' own (CI64 at load 60-87: +3); a leak of one
    # descriptor per transfer would show +20 or more
    assert len(os.listdir("/proc/self/fd")) <= before + 8


async def test_collecting_never_hangs_on_descendants_that_hold_the_streams(backend: SandboxBackend) -> None:
    """``server &`` in a command: its output until the command ends is kept, then it is ended."""
    seconds = random.randint(3000, 9999)  # a sleep no one else runs: ps below looks for it
    started = anyio.current_time()
    result = await run_collected(
        backend,
        ExecRequest(
            argv=("sh", "-c", f"sleep {seconds} & echo hi; echo err >&2"),
            cwd=backend.workspace,
            env={"PATH": "/usr/bin:/bin"},
        ),
        timeout_s=60,
    )
    assert anyio.current_time() - started < 10
    assert (result.status.exit_code, result.stdout, result.stderr) == (0, b"hi\n", b"err\n")
    script = "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '"  # no ps in every image
    ps = await run_collected(
        backend, ExecRequest(argv=("sh", "-c", script), cwd=backend.workspace, env={"PATH": "/usr/bin:/bin"})
    )
    assert b"/proc/[0-9]*/cmdline" in ps.stdout, ps.stderr  # it lists processes (itself at least)
    assert f"sleep {seconds}".encode() not in ps.stdout
