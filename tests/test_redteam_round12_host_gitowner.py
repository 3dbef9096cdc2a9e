"""Red team round 12: a repository owned by another user than the server.

Host git refuses a repository another user owns ("detected dubious ownership", git
2.35.2+), while the sandbox shows the workspace through an idmapped mount as owned by
the sandbox user, so the sandboxed git obeys it. A server running as root (or any other
user) over a user's checkout therefore judged git commands on a refusal: the
repository's own ``diff.x.textconv`` was not seen (``git diff`` ran as read-only) and
the changed-file listing was empty, so ``git diff`` printed a changed file that a
``Read`` deny rule covers without asking. Host queries now read such a repository too
(with ``safe.directory=*`` given on the command line, protected scope; they run nothing
it names).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from shellrt.tools._bashparts import git_hazard
from shellrt.tools._gitrepo import changed_paths
from tests._git import git_in, repo_with_change


@pytest.fixture
def foreign_repo(tmp_path: Path) -> Path:
    if os.geteuid() != 0:
        if os.environ.get("CI") == "true":
            pytest.fail("CI runs as root: this test needs to chown a repository to another user")
        pytest.skip("needs root to make a repository another user owns")
    ws = repo_with_change(tmp_path, "secret.txt", "old\n", "changed secret\n")
    marker = tmp_path / "ran"
    git_in(ws, "config", "diff.x.textconv", f"sh -c 'touch {marker}; cat'")
    (ws / ".gitattributes").write_text("* diff=x\n")
    for dirpath, dirnames, filenames in os.walk(ws):
        for name in [*dirnames, *filenames, "."]:
            os.lchown(os.path.join(dirpath, name), 1000, 1000)
    return ws


def test_a_foreign_owned_repository_is_still_judged(foreign_repo: Path) -> None:
    hazard = git_hazard(["git", "diff"], str(foreign_repo))
    assert "diff.x.textconv" in hazard, hazard
    assert str(foreign_repo / "secret.txt") in changed_paths(str(foreign_repo))
    assert not (foreign_repo.parent / "ran").exists()
