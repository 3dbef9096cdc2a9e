"""Red team, round 28 (bwrap): a non-root caller without the C starter had an uncapped /dev/shm.

Round 27 capped a non-root caller's one bwrap per command's /dev/shm with the sealed starter
(``zinit shm``); without it (no C compiler, ``vm.memfd_noexec`` 2) each command got bwrap's
``--tmpfs``: ~3 M inodes, ~3 GB of kernel memory while it ran (round 27 "Left"). The same step now
runs in a fresh interpreter (`sandbox._bwrap_shmstep`). FAILS, not skips, under CI=true.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy, _bwrap_starter
from sandbox.bwrap import BwrapBackend
from tests import _nonroot
from tests._bwrap_session import require_bwrap, supervised
from tests.conftest import require
from tests.test_redteam_round26_bwrap_shm import CAP, FILL  # makes files until ENOSPC or CAP+100
from tests.test_redteam_round27_bwrap_shm import AFTER

pytestmark = pytest.mark.bwrap


def test_without_the_starter_a_commands_dev_shm_is_capped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As uid 65534 failed before (1 of 1): 16,484 of 16,484 files made, 3,085,474 inodes.
    (A root caller's commands bind a directory of the capped pool: held before too.)"""
    require_bwrap()
    monkeypatch.setattr(_bwrap_starter, "starter_program_fd", lambda: "no C compiler (the test)")
    ws = tmp_path / "ws"
    ws.mkdir()

    async def main() -> tuple[str, str]:
        backend = BwrapBackend(BwrapConfig(persistent=False), SandboxPolicy(workspace=ws))
        async with supervised(backend, tmp_path / "s") as sup:
            assert backend._starter.fd() is None
            filled = (await sup.run(FILL, timeout_s=120)).preview
            return filled, (await sup.run(AFTER, timeout_s=60)).preview

    filled, after = anyio.run(main)
    assert "MADE" in filled, filled
    made, files = int(filled.split("MADE", 1)[1].split()[0]), int(filled.split("FILES", 1)[1].split()[0])
    assert made <= CAP and files <= CAP, f"/dev/shm took {made} files, has {files} inodes (cap {CAP})"
    assert "MODE 1777" in after and "LEFT 0" in after and "POSIX ok" in after, after
    assert "FDS 0 1 2 3\n" in after, after  # 3: ls's own listing
    assert after.count("CapBnd: 0000000000000000") == 2, after


def test_it_holds_for_an_unprivileged_caller() -> None:
    require(
        os.geteuid() == 0, "preparing a run as uid 65534 needs root (as non-root, run this file directly)"
    )
    require(shutil.which("setpriv") is not None, "setpriv (util-linux)")
    name = "test_without_the_starter_a_commands_dev_shm_is_capped"
    collected, outcome = _nonroot.run_as_nobody(
        [f"tests/{Path(__file__).name}::{name}"], collect_args=[f"{__file__}::{name}"]
    )
    _nonroot.assert_all_held(collected, outcome)
