"""Red team, round 22 (classifier): bash's logical ``cd l/..`` led git where no check looked.

bash's ``cd`` and ``pushd`` are logical by default: ``..`` removes the name before it, a symlink
included, so ``cd l/..`` (``l -> clean/d``) returns to the directory that holds ``l``. The Bash tool
followed ``cd`` targets physically (``realpath``: ``clean/d/..`` is ``clean``) and checked the
repository there. In a workspace whose own repository names a clean filter, with a clean nested
repository ``clean`` and a symlink ``l`` into it, ``cd l/.. && git status`` was read-only, the check
ran on ``clean``, and git ran in the workspace: the workspace repository's filter ran, unasked in
default mode (bwrap). The same held for ``cd l && cd ..`` and ``pushd l/..``. A ``..`` after a
symlink in the ``cd`` targets now makes the directory unknown (git there asks; relative reads ask,
so ``cd l/.. && cat secret`` cannot read past a deny rule by another name). The commands run only
inside bubblewrap.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests._bwrap_session import require_bwrap
from tests._git import bash_in_order, filtered_repo

pytestmark = pytest.mark.anyio

#: Each leaves bash in the workspace while the physical path of its targets is ``clean``.
ATTACKS = ["cd l/.. && git status", "cd l && cd .. && git status", "pushd l/.. && git status",
           "cd ./l/../ && git status", "cd l/d2/../.. && git status"]


def _workspace(ws: Path) -> Path:
    """A repository whose own config runs a clean filter, holding a clean repository and a link into it."""
    filtered_repo(ws)
    (ws / "clean" / "d" / "d2").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(ws / "clean")], check=True)
    (ws / "l").symlink_to("clean/d")
    return ws / "P"


async def test_git_after_a_logical_cd_through_a_symlink_is_asked(tmp_path: Path) -> None:
    require_bwrap()
    ws = tmp_path / "ws"
    marker = _workspace(ws)
    # One session, each form from the workspace (a form that ran may have moved it).
    texts = await bash_in_order(ws, tmp_path / ".s", [f"cd {ws} && " + a for a in ATTACKS])
    assert not marker.exists(), texts
    assert all("not granted" in t for t in texts), list(zip(ATTACKS, texts, strict=True))


async def test_the_premise_bash_cd_is_logical_and_git_status_plain_is_asked(tmp_path: Path) -> None:
    require_bwrap()
    ws = tmp_path / "ws"
    marker = _workspace(ws)
    probes = [f"cd {ws} && " + a.replace("git status", "pwd -P >> where") for a in ATTACKS]
    await bash_in_order(ws, tmp_path / ".s", probes, mode="bypassPermissions")
    assert (ws / "where").read_text().split() == [str(ws)] * len(ATTACKS)
    [plain] = await bash_in_order(ws, tmp_path / ".s2", ["git status"])
    assert "filter.x.clean" in plain and not marker.exists(), plain
