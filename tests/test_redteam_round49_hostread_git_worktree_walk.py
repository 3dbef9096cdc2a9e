"""Red team round 49 (hostread): host git's attribute check walked the directory a repository's ``core.worktree`` named.

`_gitrepo._own_code_keys` reads the attributes files of the work tree git names whenever the
operator's global configuration defines a diff/filter/merge driver (git-lfs's ``filter.lfs.*`` is
in most global configurations): it asks ``git rev-parse --show-toplevel`` and walks what that names,
up to 20,000 entries, on the host, for every git command judged. A repository's ``core.worktree``
chooses that directory (``/``, the operator's home, a hung mount) -- and was walked even after
``core.worktree`` itself had already made the command ask. The test lets a repository name a
directory outside it and sees whether its ``.gitattributes`` was read.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from shellrt.tools import _gitrepo
from tests.conftest import require


def test_a_repository_named_work_tree_is_not_walked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Failed before: the outside directory's .gitattributes was read (its driver reported)."""
    require(shutil.which("git") is not None, "needs git")
    home = tmp_path / "home"
    home.mkdir()
    glob = home / ".gitconfig"
    glob.write_text('[filter "lfs"]\n\tclean = git-lfs clean -- %f\n')  # the operator's own driver
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(glob))
    outside = tmp_path / "elsewhere"  # a place of the operator's the repository chose
    outside.mkdir()
    (outside / ".gitattributes").write_text("*.bin filter=lfs\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True, env={**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null"})
    subprocess.run(["git", "-C", str(repo), "config", "core.worktree", str(outside)], check=True)
    keys = _gitrepo.repo_code_keys(str(repo))
    assert any(k.startswith("core.worktree") for k in keys), keys  # the command asks either way
    read_outside = [k for k in keys if str(outside) in k and "selected by" in k]
    assert not read_outside, f"host git's check walked the repository's chosen work tree: {read_outside}"


def test_the_operators_driver_selected_in_the_repository_is_still_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Control: without a code key, the repository's own attributes are read as before."""
    require(shutil.which("git") is not None, "needs git")
    home = tmp_path / "home"
    home.mkdir()
    glob = home / ".gitconfig"
    glob.write_text('[filter "lfs"]\n\tclean = git-lfs clean -- %f\n')
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(glob))
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True, env={**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null"})
    (repo / ".gitattributes").write_text("*.bin filter=lfs\n")
    keys = _gitrepo.repo_code_keys(str(repo))
    assert any("filter=lfs selected by" in k for k in keys), keys
