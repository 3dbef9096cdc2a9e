"""A host socket below a covered directory going away does not fail a session's commands (round 53).

The session's zygote plans, once, each command's lock view (`sandbox._zygote_main.lock_view`): an
overlay over every read-only host directory, with the mounts below it moved in by name -- the masks
of host sockets there among them. A host program that removes its socket detaches that mask (the
kernel unmounts a removed mount point in every namespace), so the planned move finds nothing; the
group's end then refused the init when any mount was still below the directory (round 50: a mask
renamed since the plan). A stack of mounts at one place (``mount`` twice on it) always leaves one:
moving a path moves its top mount, the lower ones stay, hidden below the overlay. So every command
of the session failed ("a mount below /var moved since the plan") until the zygote was replaced (8 of
10 here, the 2 first came from the pool; 9, 61 and 12 of 100 in `tests/test_bwrap_socket_churn.py`
beside another session's churn). Now a mount left exactly where this group moved one from is a lower
layer of that stack and does not count; one anywhere else still fails the init.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox import BwrapConfig, SandboxPolicy, _static_build, _zinit
from sandbox.base import ExecRequest
from sandbox.bwrap import BwrapBackend
from tests.conftest import require

pytestmark = [pytest.mark.anyio]

_libc = ctypes.CDLL(None, use_errno=True)
_MNT_DETACH = 2


@pytest.fixture
def stacked() -> Iterator[Path]:
    """Two tmpfs mounts on one directory below /var (a host that mounted there twice)."""
    require(os.geteuid() == 0, "the test mounts on the host (root)")
    place = Path(tempfile.mkdtemp(prefix="shellrt-stack53-", dir="/var/tmp"))
    mounted = 0
    try:
        for _ in range(2):
            if _libc.mount(b"tmpfs", os.fsencode(place), b"tmpfs", 0, b"size=64k") != 0:
                pytest.fail(f"mount: {os.strerror(ctypes.get_errno())}")
            mounted += 1
        yield place
    finally:
        for _ in range(mounted):
            _libc.umount2(os.fsencode(place), _MNT_DETACH)
        shutil.rmtree(place, ignore_errors=True)


@pytest.mark.parametrize("init", ["c", "python"])
async def test_a_removed_host_socket_below_a_covered_directory_fails_no_command(
    tmp_path: Path, stacked: Path, monkeypatch: pytest.MonkeyPatch, init: str
) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    monkeypatch.setenv(_zinit.INIT_ENV, init)
    monkeypatch.setattr(_zinit, "_program", None)  # decided again for this init
    monkeypatch.setattr(_static_build, "_built", {})
    ws = tmp_path / "ws"
    ws.mkdir()
    directory = Path(tempfile.mkdtemp(prefix="shellrt-lv53-", dir="/var/tmp"))
    directory.chmod(0o755)
    daemon = socket.socket(socket.AF_UNIX)
    daemon.bind(str(directory / "daemon.sock"))
    daemon.listen()
    backend = BwrapBackend(BwrapConfig(persistent=True), SandboxPolicy(workspace=ws))
    results: list[tuple[int, bytes]] = []
    try:
        await backend.start()
        assert backend._zygote is not None, "the session sandbox (zygote) did not start"
        daemon.close()
        (directory / "daemon.sock").unlink()  # the host program went away: its mask is detached
        for _ in range(6):  # past the inits the pool made before
            proc = await backend.exec(
                ExecRequest(argv=("/bin/sh", "-c", "echo ran"), cwd=str(ws), merge_stderr=True)
            )
            out = b"".join([chunk async for chunk in proc.stdout])
            results.append(((await proc.wait()).exit_code, out))
    finally:
        daemon.close()
        await backend.close()
        shutil.rmtree(directory, ignore_errors=True)
    failed = [r for r in results if r != (0, b"ran\n")]
    assert failed == [], f"{len(failed)} of {len(results)} commands failed: {failed[:1]}"
