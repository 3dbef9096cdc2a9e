"""Red team, round 26: a background task swaps the cwd of one bwrap per command for a symlink.

Round 25 (supervisor, second wave) made the session's init walk the cwd one component at a time
without following a link. One bwrap per command (``persistent=False``, and a root caller's bwraps
through the spawner) still entered it with bwrap's ``--chdir``, which follows one: a background
task swapping ``d`` and a link to ``/etc`` (``renameat2(RENAME_EXCHANGE)``) made later commands
start in ``/etc`` (2 of 20 probed). Now a sealed starter (``zinit enter``, run from a memfd) does
the same walk before the command: it starts in ``d`` or is not run.
FAIL, not skip, under CI=true.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import anyio

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.bwrap import BwrapBackend
from tests import _nonroot
from tests._bwrap_session import require_bwrap, supervised
from tests._cwdswap import elsewhere, make_swapped_dir, probe_while_swapping
from tests.conftest import require

_TRIES = 30
#: "in-d" when started in d (even if renamed since), "in-etc" in /etc, else where it started. Not
#: ``pwd -P`` alone: bash keeps bwrap's $PWD when it names ".", and resolves that string again.
_PROBE = "if test -e here-d; then echo in-d; elif test -e passwd; then echo in-etc; else pwd -P; fi"


def test_a_swapped_cwd_never_starts_a_per_command_bwrap_elsewhere(tmp_path: Path) -> None:
    require_bwrap()
    ws = tmp_path / "ws"
    make_swapped_dir(ws)  # the swapper and the verdict: round 25's session test's (tests/_cwdswap.py)

    async def main() -> list[str]:
        backend = BwrapBackend(BwrapConfig(persistent=False), SandboxPolicy(workspace=ws))
        async with supervised(backend, tmp_path / "session") as sup:
            return await probe_while_swapping(sup, ws, _PROBE, _TRIES)

    printed = anyio.run(main)
    real_ws = os.path.realpath(ws)
    assert not elsewhere(printed, real_ws), printed
    assert "in-d" in printed, printed
    for refusal in (p for p in printed if p.startswith("refused")):
        assert "working directory" in refusal, refusal


def test_it_holds_for_an_unprivileged_caller() -> None:
    """A non-root caller's one bwrap per command (no spawner: started through its launchers)."""
    require(
        os.geteuid() == 0, "preparing a run as uid 65534 needs root (as non-root, run this file directly)"
    )
    require(shutil.which("setpriv") is not None, "setpriv (util-linux)")
    name = "test_a_swapped_cwd_never_starts_a_per_command_bwrap_elsewhere"
    collected, outcome = _nonroot.run_as_nobody(
        [f"tests/{Path(__file__).name}::{name}"], collect_args=[f"{__file__}::{name}"]
    )
    _nonroot.assert_all_held(collected, outcome)
