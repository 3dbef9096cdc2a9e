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
from tests.conftest import require

# The swapper (``d`` and a link to /etc, exchanged forever) and the verdict: round 25's session test's.
from tests.test_redteam_round25_supervisor_cwdswap import _SWAPPER, _elsewhere

_TRIES = 30
#: "in-d" when started in d (even if renamed since), "in-etc" in /etc, else where it started. Not
#: ``pwd -P`` alone: bash keeps bwrap's $PWD when it names ".", and resolves that string again.
_PROBE = "if test -e here-d; then echo in-d; elif test -e passwd; then echo in-etc; else pwd -P; fi"


def test_a_swapped_cwd_never_starts_a_per_command_bwrap_elsewhere(tmp_path: Path) -> None:
    require_bwrap()
    ws = tmp_path / "ws"
    (ws / "d").mkdir(parents=True)
    (ws / "d" / "here-d").touch()  # the swaps rename d under a running command: its marker

    async def main() -> list[str]:
        backend = BwrapBackend(BwrapConfig(persistent=False), SandboxPolicy(workspace=ws))
        async with supervised(backend, tmp_path / "session") as sup:
            await sup.start_background(_SWAPPER, description="swapper")
            with anyio.fail_after(120):  # a background task gets little CPU beside busy loops
                while not (ws / "started").exists():
                    await anyio.sleep(0.01)
            printed: list[str] = []
            for _ in range(_TRIES):  # until a start met the link (refused) and one ran in d
                result = await sup.run(_PROBE, timeout_s=30, session_cwd=str(ws / "d"))
                printed.append(
                    result.preview.strip() if result.exit_code == 0 else f"refused: {result.preview}"
                )
                if _elsewhere(printed, str(ws)) or (
                    "in-d" in printed and any(p.startswith("refused") for p in printed)
                ):
                    break
            return printed

    printed = anyio.run(main)
    real_ws = os.path.realpath(ws)
    assert not _elsewhere(printed, real_ws), printed
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
