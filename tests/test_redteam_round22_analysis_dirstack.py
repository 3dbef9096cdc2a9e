"""Red team, round 22 (classifier): ``popd``, ``pushd`` and ``~-``/``~N`` led git where no check looked.

The Bash tool follows a command's ``cd``s to find the repository each git part obeys, and checks
that repository's own configuration (a clean filter, a textconv driver: programs the hardening
environment cannot switch off) before a read-only git command runs unasked. It read ``cd``,
``pushd`` and ``popd`` by their words, but bash also moves through its directory stack and OLDPWD,
which no word names: ``popd`` (no operand) returns to the directory pushed before, ``pushd`` (no
operand) swaps the two top entries, ``cd ~-`` is ``cd "$OLDPWD"``, ``cd ~1``/``~+1``/``~-1`` are
stack entries. ``pushd xy && pushd "$WS" && popd && git status`` was read-only, the repository check
ran on the workspace (``$WS``, the last directory a word named), and git ran in ``xy``, a nested
repository whose ``.git/config`` names a clean filter: the filter ran, unasked in default mode.
Round 19 closed the same class for ``cd`` to a glob (``cd x?``); a move through the stack or
OLDPWD now makes the directory unknown the same way (git there asks). The commands run only
inside bubblewrap.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._bwrap_session import require_bwrap
from tests._git import bash_in_order, filtered_repo

pytestmark = pytest.mark.anyio


#: Each leaves bash in ``xy`` while the last directory a word names is the workspace (``{ws}``).
ATTACKS = [
    "pushd xy && pushd {ws} && popd && git status",
    "pushd -n xy && pushd && git status",
    "cd {ws} && pushd -n xy && pushd && git status",
    "cd xy && cd {ws} && cd ~- && git status",
    "pushd xy && pushd {ws} && cd ~1 && git status",
    "pushd xy && pushd {ws} && cd ~+1 && git status",
    "pushd xy && pushd {ws} && cd ~-1 && git status",
    "pushd xy && pushd {ws} && pushd && git status",
    "pushd xy && pushd {ws} && pushd ~1 && git status",
]


def _nested_repo(ws: Path) -> Path:
    """``ws/xy``: a repository whose own config runs a clean filter on its modified file."""
    filtered_repo(ws / "xy", touches="../P")
    return ws / "P"


async def test_git_after_a_move_through_the_directory_stack_is_asked(tmp_path: Path) -> None:
    require_bwrap()
    ws = tmp_path / "ws"
    marker = _nested_repo(ws)
    # One session, each form from the workspace (a form that ran would have moved it).
    texts = await bash_in_order(ws, tmp_path / ".s", [f"cd {ws} && " + a.format(ws=ws) for a in ATTACKS])
    assert not marker.exists(), texts
    assert all("not granted" in t for t in texts), list(zip(ATTACKS, texts, strict=True))


async def test_the_premise_bash_ends_in_the_nested_repository(tmp_path: Path) -> None:
    """Every attack's directory moves, run without git, end in ``xy`` (so git would obey its config)."""
    require_bwrap()
    ws = tmp_path / "ws"
    _nested_repo(ws)
    probes = [f"cd {ws} && " + a.format(ws=ws).replace("git status", "pwd >> where") for a in ATTACKS]
    texts = await bash_in_order(ws, tmp_path / ".s", probes, mode="bypassPermissions")
    where = (ws / "xy" / "where").read_text().split()
    assert where == [str(ws / "xy")] * len(ATTACKS), texts
