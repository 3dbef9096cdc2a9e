"""Red team, round 28 (bwrap): a root caller whose temp dir lies below a 0700 directory.

A root caller's one bwrap per command runs as the leased sandbox uid, which must reach the session's
/dev tree, /tmp and /dev/shm pool under the host's temp dir. Below a 0700 directory it cannot: the
start failed with "bubblewrap cannot create namespaces here" and a fix about user namespaces (round
16 "Left open", round 27 "Left"). Round 28 made the start say which directory is closed and what to
do; round 40 (tenants) made bwrap's holders independent of TMPDIR: both kinds of start now work there.
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


def test_a_closed_temp_dir_does_not_stop_bwrap(open_base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Failed in round 28 (1 of 1): the error blamed user namespaces ("cannot create namespaces here");
    round 28 named the closed directory instead. Since round 40 (tenants) a bwrap session's holders are
    made under /tmp whatever TMPDIR says, so a closed TMPDIR neither stops it nor holds its files."""
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

    assert anyio.run(per_command) == "started"
    assert "ran" in anyio.run(session)
    assert os.listdir(closed / "tmp") == [], "a bwrap start used the caller's TMPDIR"
