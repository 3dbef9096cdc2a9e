"""Red team, round 42 (supervisor2): a Supervisor dropped without `close`.

Round 41 (review19) left it: each such session kept its ``output-account`` descriptor open for the
process's life. Measured here over many dropped sessions, what else stayed: the empty spare files
and the shared empty name its spool made ahead (about ten inodes a session). A long-lived server
or batch harness whose caller drops sessions on an error path ran out of descriptors.
"""

from __future__ import annotations

import gc
import os
from pathlib import Path

import pytest

from sandbox import SandboxPolicy
from sandbox.local import LocalBackend
from shellrt.supervisor import Supervisor
from tests import _nonroot

pytestmark = pytest.mark.anyio

#: 300 before round 52 (suitetime2): 20 s of the lane in CI142 and 13 s more for the non-root twin.
#: A leak of one descriptor per session (the bug) already reads 60 against the bound of 10, and
#: one spare file left by any session fails the second assertion.
_SESSIONS = 60


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


async def test_dropped_sessions_leave_no_descriptor_and_no_spare(tmp_path: Path) -> None:
    """Failed before: one descriptor (its account) and ~10 spare files stayed per session (300 and ~3,000
    for the 300 sessions this test dropped then)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    backend = LocalBackend(policy=SandboxPolicy(workspace=ws))
    await backend.start()
    try:
        await Supervisor(backend, session_dir=tmp_path / "warm").run("true", timeout_s=30)
        gc.collect()
        before = _fds()
        for n in range(_SESSIONS):
            sup = Supervisor(backend, session_dir=tmp_path / f"s{n}")
            await sup.run("true", timeout_s=30)
            del sup
        gc.collect()
        grown = _fds() - before
        spares = [p for p in tmp_path.rglob(".cmd-*") if p.is_file()]
    finally:
        await backend.close()
    assert grown < 10, f"{_SESSIONS} dropped sessions left {grown} descriptors open"
    assert not spares, f"{_SESSIONS} dropped sessions left {len(spares)} spare files, e.g. {spares[:3]}"


def test_it_holds_for_an_unprivileged_caller() -> None:
    """The same as uid 65534 (the local backend's subreaper in place of the session cgroup, the
    registry in that uid's place)."""
    _nonroot.held_as_nobody(
        __file__,
        "test_dropped_sessions_leave_no_descriptor_and_no_spare",
    )
