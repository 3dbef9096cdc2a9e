"""The Bash tool's reading of a repository's git configuration (``shellrt.tools._gitrepo``)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from shellrt.tools._gitrepo import repo_code_keys


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    ws = tmp_path / "ws"
    ws.mkdir()
    _git(ws, "init", "-q")
    return ws


def test_plain_repository_has_no_code_keys(repo: Path) -> None:
    assert repo_code_keys(str(repo)) == []


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("diff.evil.textconv", "sh -c x"),
        ("diff.Evil.command", "x"),
        ("filter.f.process", "x"),
        ("merge.m.driver", "x"),
        ("remote.origin.uploadpack", "x"),
        ("gpg.openpgp.program", "x"),
        ("credential.https://h.test.helper", "x"),
        ("diff.external", "x"),
    ],
)
def test_repository_code_keys_are_reported(repo: Path, key: str, value: str) -> None:
    _git(repo, "config", key, value)
    found = repo_code_keys(str(repo))
    assert len(found) == 1 and found[0].lower().startswith(key.lower()) and ".git/config" in found[0]


def test_keys_reached_through_an_include_are_reported(repo: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.cfg"
    other.write_text('[diff "x"]\n\ttextconv = touch PWNED\n')
    _git(repo, "config", "include.path", str(other))
    found = repo_code_keys(str(repo))
    assert any("diff.x.textconv" in f and str(other) in f for f in found)


def test_overridden_and_harmless_keys_are_not_reported(repo: Path) -> None:
    _git(repo, "config", "core.pager", "less")  # overridden for read-only commands
    _git(repo, "config", "core.hooksPath", ".husky")  # overridden too
    _git(repo, "config", "diff.noop.textconv", "")  # empty: nothing runs
    assert repo_code_keys(str(repo)) == []


def test_operator_drivers_count_only_when_the_repository_selects_them(repo: Path) -> None:
    Path(os.environ["HOME"], ".gitconfig").write_text('[filter "lfs"]\n\tclean = git-lfs clean -- %f\n')
    assert repo_code_keys(str(repo)) == []
    (repo / "sub").mkdir()
    (repo / "sub" / ".gitattributes").write_text("*.bin filter=lfs\n")
    found = repo_code_keys(str(repo))
    assert any("filter=lfs" in f and "sub/.gitattributes" in f for f in found)


def test_unreadable_configuration_fails_closed(repo: Path) -> None:
    (repo / ".git" / "config").write_text("[core\nbroken")
    found = repo_code_keys(str(repo))
    assert found and "could not be read" in found[0]
