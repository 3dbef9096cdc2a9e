"""Red team, round 28 (bwrap): a root caller whose temp dir lies below a 0700 directory.

A root caller's one bwrap per command runs as the leased sandbox uid, which must reach the session's
/dev tree, /tmp and /dev/shm pool under the host's temp dir. Below a 0700 directory it cannot: the
start failed with "bubblewrap cannot create namespaces here" and a fix about user namespaces (round
16 "Left open", round 27 "Left"). Now the start says which directory is closed and what to do; a
session under its zygote still works there.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from sandbox import BackendUnavailableError, BwrapConfig, SandboxPolicy
from sandbox.bwrap import BwrapBackend
from tests._bwrap_session import require_bwrap, supervised

pytestmark = [
    pytest.mark.bwrap,
    pytest.mark.skipif(os.geteuid() != 0, reason="a root caller's (a non-root bwrap runs as the caller)"),
]


@pytest.fixture
def open_base() -> Iterator[Path]:
    """A 0755 directory under /tmp (pytest's own base is 0700 already), removed after."""
    base = Path(tempfile.mkdtemp(dir="/tmp"))
    base.chmod(0o755)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def test_a_closed_temp_dir_is_named_with_its_fix(open_base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Failed before (1 of 1): the error blamed user namespaces ("cannot create namespaces here")."""
    require_bwrap()
    base = open_base
    closed = base / "closed"
    (closed / "tmp").mkdir(parents=True)
    closed.chmod(0o700)
    ws = base / "ws"
    ws.mkdir(mode=0o755)
    monkeypatch.setenv("TMPDIR", str(closed / "tmp"))
    monkeypatch.setattr(tempfile, "tempdir", None)

    async def per_command() -> str:
        backend = BwrapBackend(BwrapConfig(persistent=False), SandboxPolicy(workspace=ws))
        try:
            await backend.start()
        except BackendUnavailableError as exc:
            return str(exc)
        finally:
            await backend.close()
        return "started"

    async def session() -> str:
        backend = BwrapBackend(BwrapConfig(persistent=True), SandboxPolicy(workspace=ws))
        async with supervised(backend, base / "s") as sup:
            return (await sup.run("echo ran", timeout_s=60)).preview

    said = anyio.run(per_command)
    assert f"{closed} is closed to other users" in said and "TMPDIR" in said, said
    assert "namespaces" not in said, said
    assert os.listdir(closed / "tmp") == [], "the refused start left its files"
    assert "ran" in anyio.run(session)
