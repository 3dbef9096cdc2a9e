"""Red team, round 22 (classifier): git ran in a directory other than the one whose repository was checked.

The Bash tool checks the configuration of the repository a git part obeys (a clean filter, a
textconv driver: programs the hardening environment cannot switch off) before the part runs
unasked. It checked one directory only: the last one the command's ``cd`` words lead to. But a
``cd`` can fail and leave bash where it was (a missing directory, a file, two operands: ``cd a b``
is an error in bash 5.2), and a git part before the ``cd`` runs where the command started. In a
workspace whose own repository names a clean filter (``git status`` alone asks), ``cd nope; git
status``, ``cd f; git status`` (a file), ``cd clean x; git status`` and ``git status; cd clean`` were
read-only: the check ran on ``nope`` (no directory, so no repository: nothing to report) or on the
clean nested repository, and git ran in the workspace: the filter ran, unasked in default mode
(bwrap). Every directory the command may be in is now checked. The commands run only inside
bubblewrap.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests._bwrap_session import require_bwrap
from tests._git import bash_in_order, filtered_repo

pytestmark = pytest.mark.anyio

#: Each runs git in the workspace while the last ``cd`` names another directory.
ATTACKS = ["cd nope; git status", "cd nope || git status", "cd f; git diff", "cd clean x; git status",
           "git status; cd clean", "git status && cd clean && ls", "pushd nope; git status",
           "(cd clean); git status", "cd clean | cat; git status"]


def _workspace(ws: Path) -> Path:
    """A repository whose own config runs a clean filter on its modified file, holding a clean repository."""
    filtered_repo(ws)
    subprocess.run(["git", "init", "-q", str(ws / "clean")], check=True)
    return ws / "P"


async def test_git_where_a_cd_failed_or_had_not_run_yet_is_checked(tmp_path: Path) -> None:
    require_bwrap()
    ws = tmp_path / "ws"
    marker = _workspace(ws)
    # One session, each form from the workspace (a form that ran may have moved it).
    texts = await bash_in_order(ws, tmp_path / ".s", [f"cd {ws} && " + a for a in ATTACKS])
    assert not marker.exists(), texts
    assert all("not granted" in t for t in texts), list(zip(ATTACKS, texts, strict=True))


async def test_the_premise_plain_git_asks_and_clean_repositories_still_run(tmp_path: Path) -> None:
    require_bwrap()
    ws = tmp_path / "ws"
    marker = _workspace(ws)
    [plain] = await bash_in_order(ws, tmp_path / ".s", ["git status"])
    assert "filter.x.clean" in plain and not marker.exists(), plain
    # Without the filter every place is clean: the same commands still run unasked (the cost).
    subprocess.run(["git", "config", "--unset", "filter.x.clean"], cwd=ws, check=True)
    texts = await bash_in_order(ws, tmp_path / ".s2", [f"cd {ws} && " + a for a in ATTACKS if "git status" in a])
    assert all("not granted" not in t for t in texts), texts
