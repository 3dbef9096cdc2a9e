"""Red team, round 43 (review20): a start that failed kept its cwd report FIFO.

Since round 42 (bwrap5) the host makes each command's report FIFO, and opens its read end, before
the command starts; only the command's end (its status read) dropped it. A start that failed after
that (a command text the init cannot pass: a NUL byte; a zygote gone; a bwrap that did not start)
kept both until the sandbox closed: one host descriptor and one FIFO per failed start. A caller's
input fails a start at will, so the host ran out of descriptors (1024), and a root caller's sized
reports directory (256 inodes) filled: every later report failed, so no later ``cd`` moved the
session (the starvation round 42 closed for commands, by the host's own hand).
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox._tmpcap import REPORTS_INODES
from sandbox.bwrap import BwrapBackend
from sandbox.errors import SandboxExecError
from tests import _nonroot
from tests._bwrap_session import require_bwrap, supervised

pytestmark = pytest.mark.bwrap

#: Past the root caller's reports inodes: the next report would find no room.
_FAILED_STARTS = REPORTS_INODES + 8


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
def test_failed_starts_leave_no_report_behind(tmp_path: Path, persistent: bool) -> None:
    """Failed before as root (session and per command): 264 failed starts left 264 FIFOs and host
    descriptors, and the next ``cd sub`` was lost (no room for its report); as uid 65534 the
    descriptors and FIFOs stayed likewise (its reports directory is not sized): 4 of 4."""
    require_bwrap()
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    backend = BwrapBackend(BwrapConfig(persistent=persistent), SandboxPolicy(workspace=ws))

    async def main() -> tuple[int, int, int, str]:
        async with supervised(backend, tmp_path / "s") as sup:
            await sup.run("true", timeout_s=60)  # everything made on first use is made
            before = _open_fds()
            failed = 0
            for _ in range(_FAILED_STARTS):
                try:
                    await sup.run("cd sub\0", timeout_s=60)
                except (ValueError, SandboxExecError):  # the start refused, as it should be
                    failed += 1
            grown = _open_fds() - before
            reports = backend._runner.report_dir
            assert reports is not None
            reports.chmod(0o700)  # the test's look only (the owner may not list it either)
            try:
                left = len(os.listdir(reports))
            finally:
                reports.chmod(0o711 if os.geteuid() == 0 else 0o300)
            await sup.run("cd sub", timeout_s=60)
            return failed, grown, left, sup.cwd

    failed, grown, left, cwd = anyio.run(main)
    said = f"failed {failed}, descriptors +{grown}, FIFOs left {left}, cwd {cwd}"
    assert failed == _FAILED_STARTS, said
    assert grown < 16 and left == 0 and Path(cwd) == ws / "sub", said


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(__file__, "test_failed_starts_leave_no_report_behind")
