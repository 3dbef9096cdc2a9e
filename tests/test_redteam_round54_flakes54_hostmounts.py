"""Host mounts coming and going below a covered directory do not fail a session's commands (round 54).

The session's zygote plans each command's lock view once (`sandbox._zygote_main.lock_view`): an
overlay over /var with the mounts below it moved in by name. When a planned move finds nothing
(the host unmounted that mount: a container stopped, a test's tmpfs went away), the group's end read
the mount table again and refused the init for any mount below the directory that was not at a name
the group moved a mount from (round 50: a mask renamed since the plan; round 53 let a stack's lower
layer pass). A host mount the plan never knew -- made below a planned mount after it went away, or
made anywhere below /var while an init set itself up (another container's overlay, another test's
tmpfs) -- failed the command: "cannot start the command: [Errno 16] a mount below /var moved since
the plan" (CI149). Now the end refuses only a mount it saw at the head at another name now: a
rename. A mount made since is the host's, not a mask of this session; a rename still fails closed
(`test_redteam_round50_sandbox10_renamedmask.py`).
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


def _mount_tmpfs(at: Path) -> None:
    if _libc.mount(b"tmpfs", os.fsencode(at), b"tmpfs", 0, b"size=64k") != 0:
        pytest.fail(f"mount {at}: {os.strerror(ctypes.get_errno())}")


@pytest.fixture
def host_place() -> Iterator[Path]:
    """A directory below /var (a host's), everything mounted in it taken off at the end."""
    require(os.geteuid() == 0, "the test mounts on the host (root)")
    place = Path(tempfile.mkdtemp(prefix="shellrt-r54-flakes54-", dir="/var/tmp"))
    place.chmod(0o755)
    try:
        yield place
    finally:
        for _ in range(8):  # bounded: more than the test makes
            if _libc.umount2(os.fsencode(place / "stack"), _MNT_DETACH) != 0:
                break
        shutil.rmtree(place, ignore_errors=True)


@pytest.mark.parametrize("init", ["c", "python"])
async def test_a_mount_inside_a_stacks_lower_layer_fails_no_command(
    tmp_path: Path, host_place: Path, monkeypatch: pytest.MonkeyPatch, init: str
) -> None:
    """A host tmpfs below /var with a mount inside it, another tmpfs stacked over it (a daemon that
    mounted its root over itself again, as dockerd does with /var/lib/docker), and a masked host
    socket below /var that goes away after the session starts. Moving the stack's path moves its
    top; the lower layer stays (round 53 let it pass) and so does the mount inside it, which
    failed every command. Failed before: 6 of 6 (C init), 6 of 6 (Python init)."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    monkeypatch.setenv(_zinit.INIT_ENV, init)
    monkeypatch.setattr(_zinit, "_program", None)  # decided again for this init
    monkeypatch.setattr(_static_build, "_built", {})
    ws = tmp_path / "ws"
    ws.mkdir()
    stack = host_place / "stack"
    stack.mkdir()
    _mount_tmpfs(stack)  # the lower layer
    (stack / "inside").mkdir()
    _mount_tmpfs(stack / "inside")  # a mount inside it
    _mount_tmpfs(stack)  # the top, over both
    daemon = socket.socket(socket.AF_UNIX)
    daemon.bind(str(host_place / "daemon.sock"))
    daemon.listen()
    backend = BwrapBackend(BwrapConfig(persistent=True), SandboxPolicy(workspace=ws))
    results: list[tuple[int, bytes]] = []
    try:
        await backend.start()
        assert backend._zygote is not None, "the session sandbox (zygote) did not start"
        daemon.close()
        (host_place / "daemon.sock").unlink()  # its mask goes: a planned move finds nothing
        for _ in range(6):  # past the inits the pool made before
            proc = await backend.exec(
                ExecRequest(argv=("/bin/sh", "-c", "echo ran"), cwd=str(ws), merge_stderr=True)
            )
            out = b"".join([chunk async for chunk in proc.stdout])
            results.append(((await proc.wait()).exit_code, out))
    finally:
        daemon.close()
        await backend.close()
    failed = [r for r in results if r != (0, b"ran\n")]
    assert failed == [], f"{len(failed)} of {len(results)} commands failed: {failed[:1]}"
