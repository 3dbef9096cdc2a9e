"""Left-overs, round 14: the session /tmp of a non-root caller's bwrap session.

A root caller's session /tmp is a sized tmpfs mounted on its host directory (`sandbox._tmpcap`);
a non-root caller cannot mount on the host, so its /tmp is a plain host directory, bounded only by
the filesystem it is made on. Why no cap of shellrt's own is possible there (measured): see
docs/security.md, "Left-overs, round 14". What holds instead, tested here for whichever caller
runs this file (root, or uid 65534 through `tests._nonroot.run_as_nobody`):

* an explicit ``tmp_bytes`` is refused, and the refusal says why and what to do (it said "this
  backend has no such limit", which is false for a root caller and names no way out: failed before);
* the session's /tmp is made in the system temp directory (``TMPDIR``), so an operator who puts
  that on a size-limited filesystem caps it: as root a 16 MiB tmpfs given as ``TMPDIR`` (with
  shellrt's own cap off, the non-root shape) makes a 32 MiB write fail with ENOSPC.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.errors import SandboxPolicyError
from sandbox.factory import create_backend
from sandbox.policy import ResourceLimits
from shellrt.supervisor import Supervisor
from tests.conftest import require

MiB = 1 << 20


@pytest.fixture
def base() -> Iterator[Path]:
    """A 0755 directory in /var/tmp holding ``ws`` (0777: the sandbox uid writes there) and ``tmpdir`` (1777, as /tmp)."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    path = Path(tempfile.mkdtemp(prefix="left14-tmp-", dir="/var/tmp"))
    path.chmod(0o755)
    for name in ("ws", "tmpdir"):
        (path / name).mkdir()
        (path / name).chmod(0o777 if name == "ws" else 0o1777)
    try:
        yield path
    finally:
        _umount(path / "tmpdir")
        shutil.rmtree(path, ignore_errors=True)


def _umount(path: Path) -> None:
    if os.path.ismount(path):
        ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True).umount2(os.fsencode(path), 2)


def test_an_explicit_tmp_cap_is_enforced_or_refused_with_the_way_out(base: Path) -> None:
    policy = SandboxPolicy(workspace=base / "ws", limits=ResourceLimits(tmp_bytes=16 * MiB))
    if os.geteuid() == 0:
        assert "tmp" in create_backend(BwrapConfig(persistent=False), policy).enforces()
        return
    with pytest.raises(SandboxPolicyError) as refused:
        create_backend(BwrapConfig(persistent=False), policy)
    said = str(refused.value)
    assert "only root can mount" in said and "TMPDIR" in said, said


async def _run(ws: Path, session: Path, command: str) -> tuple[str, Path]:
    backend = create_backend(BwrapConfig(persistent=False, default_tmp_bytes=None), SandboxPolicy(workspace=ws))
    await backend.start()
    try:
        tmp = backend.session_tmp  # type: ignore[attr-defined]
        async with Supervisor(backend, session_dir=session) as sup:
            result = await sup.run(command, timeout_s=60)
            assert result.output_path is not None
            return result.output_path.read_text() + f"\nhost-sees: {sorted(os.listdir(tmp))}", tmp
    finally:
        await backend.close()


def test_an_operators_sized_tmpdir_bounds_the_session_tmp(
    base: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tmpdir = base / "tmpdir"
    sized = os.geteuid() == 0
    if sized:  # the operator's part: a size-limited filesystem as the temp directory
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        assert libc.mount(b"tmpfs", os.fsencode(tmpdir), b"tmpfs", 0x6, f"size={16 * MiB},mode=1777".encode()) == 0
    monkeypatch.setattr(tempfile, "tempdir", str(tmpdir))
    command = "echo hi > /tmp/mine && { head -c 32M /dev/zero > /tmp/big; } 2>&1; echo rc=$?"
    out, tmp = anyio.run(_run, base / "ws", tmp_path / "s", command)
    assert tmpdir in tmp.parents, (tmp, tmpdir)  # made where the operator said
    assert "'mine'" in out, out  # the host side (the file tools) serves that same directory
    if sized:
        assert "No space left on device" in out and "rc=1" in out, out
    else:
        assert "rc=0" in out, out  # no cap but the filesystem's: why, docs/security.md
