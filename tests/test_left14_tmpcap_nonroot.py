"""Left-overs, round 14: the session /tmp of a non-root caller's bwrap session.

A root caller's session /tmp is a sized tmpfs mounted on its host directory (`sandbox._tmpcap`);
a non-root caller cannot mount on the host, so its /tmp is a plain host directory, bounded only by
the filesystem it is made on. Why no cap of shellrt's own is possible there (measured): see
docs/security.md, "Left-overs, round 14". What holds instead, tested here for whichever caller
runs this file (root, or uid 65534 through `tests._nonroot.run_as_nobody`):

* an explicit ``tmp_bytes`` is refused, and the refusal says why and what to do (it said "this
  backend has no such limit", which is false for a root caller and names no way out: failed before);
* the session's /tmp is made below the host's /tmp whatever ``TMPDIR`` says (round 40, tenants: a
  holder below another ``TMPDIR`` was in every other process's sandboxes' view), so an operator bounds
  it by sizing the host's /tmp; it was made in ``TMPDIR`` (round 14's knob, given up for that).
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


def test_the_session_tmp_is_made_below_the_hosts_tmp_whatever_tmpdir_says(
    base: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tmpdir = base / "tmpdir"
    monkeypatch.setattr(tempfile, "tempdir", str(tmpdir))
    command = "echo hi > /tmp/mine && { head -c 1M /dev/zero > /tmp/big; } 2>&1; echo rc=$?"
    out, tmp = anyio.run(_run, base / "ws", tmp_path / "s", command)
    assert tmpdir not in tmp.parents and tmp.parent.parent == Path("/tmp"), (tmp, tmpdir)
    assert "'mine'" in out and "rc=0" in out, out  # the host side (the file tools) serves that same directory
