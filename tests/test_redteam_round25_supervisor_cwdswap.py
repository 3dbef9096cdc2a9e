"""Red team, round 25 (second wave): a background task swaps the session's cwd for a symlink.

The host judges the session's cwd before each command (`CwdTracker.start_dir`: a physical
directory inside the roots, reached without a symlink, not read-denied), and the permission
decision and read-only judgement of the command are made for that path. The sandbox then entered
it by name (``chdir``), following whatever it was by then: a background task of the session that
swaps ``d`` for a symlink and back in a loop (``renameat2(RENAME_EXCHANGE)``) made later commands
start where the link leads (here ``/etc``: outside the workspace, readable in the sandbox), so a
``git status`` judged for the workspace would run in another repository. Now the session's init
walks the cwd one component at a time without following a symlink and ``fchdir``s there: the
command starts in exactly the directory at the path the host judged, or is not run (the session
then goes back to the workspace root with a note). Both inits (C and Python).
FAIL, not skip, under CI=true.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from sandbox import _zinit
from sandbox._zinit import INIT_ENV
from tests._bwrap_session import zygote_session
from tests._cwdswap import elsewhere, make_swapped_dir, probe_while_swapping

_TRIES = 40
#: "in-d" when started in d (even if renamed since), else where it started.
_PROBE = "test -e here-d && echo in-d || pwd -P"


@pytest.mark.parametrize("init", ["c", "python"])
def test_a_swapped_cwd_never_starts_a_command_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, init: str
) -> None:
    monkeypatch.setenv(INIT_ENV, init)
    monkeypatch.setattr(_zinit, "_program", None)  # decided once per process: again for this one

    async def main() -> list[str]:
        async with zygote_session(tmp_path) as (backend, sup):
            assert backend._zygote is not None and backend._zygote.c_init == (init == "c")
            ws = tmp_path / "ws"
            make_swapped_dir(ws)
            return await probe_while_swapping(sup, ws, _PROBE, _TRIES)

    printed = anyio.run(main)
    assert not elsewhere(printed, os.path.realpath(tmp_path / "ws")), printed
    assert "in-d" in printed, printed  # the loop did run commands in d
    # It met the race: refused in the sandbox, or (at load, where the swap is mostly seen by the
    # host's own check first: CI55) started at the workspace root, the host's fallback.
    ws = os.path.realpath(tmp_path / "ws")
    assert any(p.startswith("refused") or p == ws for p in printed), printed
    for refusal in (p for p in printed if p.startswith("refused")):
        assert "cannot enter the working directory" in refusal, refusal


def test_an_explicit_cwd_named_through_a_link_starts_at_its_target(tmp_path: Path) -> None:
    """The init no longer follows a link to the cwd: a caller's cwd named through one inside the
    roots starts where the host judged it (its target), not refused."""

    async def main() -> list[str]:
        async with zygote_session(tmp_path) as (_backend, sup):
            ws = tmp_path / "ws"
            (ws / "sub").mkdir()
            (ws / "link").symlink_to("sub")
            results = [await sup.run("pwd -P", timeout_s=30, cwd=c) for c in ("link", str(ws / "link"))]
            return [r.preview.strip() for r in results if r.exit_code == 0]

    sub = os.path.realpath(tmp_path / "ws" / "sub")
    assert anyio.run(main) == [sub, sub]
