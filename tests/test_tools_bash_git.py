"""The Bash tool's reading of a repository's git configuration (``shellrt.tools._gitrepo``).

Every test runs once per git binary found: the system's (2.39 on Debian 12) and the newer one
``scripts/install-system-deps.sh`` builds from Debian 13's source into ``/opt/shellrt-git``
(``SHELLRT_TEST_GIT`` names another), so a key that only a newer git obeys is caught too.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from shellrt.analysis.git_env import git_hardening_env
from shellrt.tools._gitrepo import repo_code_keys

_NEWER_GIT = os.environ.get("SHELLRT_TEST_GIT", "/opt/shellrt-git/bin/git")


def _git_binaries() -> list[str]:
    found = [shutil.which("git") or "git"]
    if os.path.isfile(_NEWER_GIT) and os.access(_NEWER_GIT, os.X_OK):
        found.append(_NEWER_GIT)
    return found


def _version(binary: str) -> str:
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, check=False).stdout
    return out.strip().rpartition(" ")[2] or binary


_GITS = _git_binaries()


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)


def test_a_newer_git_is_tested_in_ci() -> None:
    if os.environ.get("CI") != "true":
        pytest.skip("outside CI only the git binaries present are tested")
    assert len(_GITS) > 1, f"no newer git at {_NEWER_GIT}: run scripts/install-system-deps.sh"


@pytest.fixture(params=_GITS, ids=[f"git-{_version(g)}" for g in _GITS])
def git_binary(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Puts this git first on PATH: the tests' own git calls and ``_gitrepo``'s use it."""
    binary = str(request.param)
    monkeypatch.setenv("PATH", os.path.dirname(os.path.abspath(binary)) + os.pathsep + os.environ["PATH"])
    assert _version("git") == _version(binary)
    return binary


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, git_binary: str) -> Path:
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
        # programs, files written, another work tree, files read from outside the repository
        ("hook.pre.command", "x"),
        ("gpg.ssh.defaultKeyCommand", "x"),
        ("imap.tunnel", "x"),
        ("sendemail.smtpServer", "/tmp/x"),
        ("trailer.sign.command", "x"),
        ("guitool.t.cmd", "x"),
        ("trace2.eventTarget", "/tmp/x"),
        ("trace2.normalTarget", "/tmp/x"),
        ("trace2.perfTarget", "/tmp/x"),
        ("core.worktree", "/tmp"),
        ("core.excludesFile", "/etc/passwd"),
        ("mailmap.file", "/etc/passwd"),
        ("blame.ignoreRevsFile", "/etc/passwd"),
        ("gpg.ssh.allowedSignersFile", "/etc/passwd"),
        ("includeIf.gitdir:/nowhere/.path", "/nowhere/x"),
        ("gc.recentObjectsHook", "x"),
        ("diff.orderFile", "/etc/passwd"),
        ("http.cookieFile", "/tmp/x"),
    ],
)
def test_repository_code_keys_are_reported(repo: Path, key: str, value: str) -> None:
    _git(repo, "config", key, value)
    found = repo_code_keys(str(repo))
    assert len(found) == 1 and found[0].lower().startswith(key.lower()) and ".git/config" in found[0], found


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("core.fsmonitor", "x"),
        ("core.hooksPath", "/tmp"),
        ("core.attributesFile", "/tmp/attrs"),
        ("uploadpack.packObjectsHook", "x"),
        ("protocol.ext.allow", "always"),
        ("core.sshCommand", "x"),
    ],
)
def test_keys_the_hardening_overrides_count_for_commands_run_without_it(
    repo: Path, key: str, value: str
) -> None:
    _git(repo, "config", key, value)
    found = repo_code_keys(str(repo), hardened=False)
    assert len(found) == 1 and found[0].lower().startswith(key.lower()), found


def test_another_work_tree_is_reported_because_git_reads_it(repo: Path, tmp_path: Path) -> None:
    """``core.worktree`` points git at files outside the repository (and the workspace)."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "outside.txt").write_text("secret\n")
    _git(repo, "config", "core.worktree", str(elsewhere))
    listed = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=repo,
        capture_output=True,
        text=True,
        env={**os.environ, **git_hardening_env()},
        check=True,
    ).stdout
    assert "outside.txt" in listed  # this git obeys it
    assert any(f.startswith("core.worktree") for f in repo_code_keys(str(repo)))


def test_an_include_is_reported_even_when_what_it_includes_is_harmless(repo: Path, tmp_path: Path) -> None:
    other = tmp_path / "plain.cfg"
    other.write_text("[color]\n\tui = auto\n")
    _git(repo, "config", "include.path", str(other))
    assert any(f.startswith("include.path") for f in repo_code_keys(str(repo)))


def test_a_repository_include_is_reported_without_being_followed(repo: Path, tmp_path: Path) -> None:
    """The include alone makes git ask; what it names is never read (a FIFO would block git)."""
    other = tmp_path / "other.cfg"
    other.write_text('[diff "x"]\n\ttextconv = touch PWNED\n')
    _git(repo, "config", "include.path", str(other))
    found = repo_code_keys(str(repo))
    assert any(f.startswith("include.path") for f in found), found
    assert not any("diff.x.textconv" in f for f in found), found


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


@pytest.mark.anyio
async def test_git_reads_work_through_the_bash_tool(repo: Path, tmp_path: Path, git_binary: str) -> None:
    """The hardened environment must not break git: diff, log -p and show of a changed tree, unasked."""
    import shellrt
    from shellrt.protocol import ToolUseBlock
    from shellrt.tools.bash import Bash

    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    (repo / "notes.txt").write_text("one\n")
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True, env={**os.environ, **env})
    subprocess.run(["git", "commit", "-qm", "first"], cwd=repo, check=True, env={**os.environ, **env})
    (repo / "notes.txt").write_text("one\ntwo\n")
    commands = ["git --version", "git diff", "git log -p -1", "git show HEAD", "git diff --stat"]
    async with shellrt.Runtime(
        workspace=repo, sandbox="local", session_dir=tmp_path / ".s", tools=[Bash()], mode="dontAsk"
    ) as rt:
        blocks = [
            ToolUseBlock(id=f"git-{i}", name="Bash", input={"command": c}) for i, c in enumerate(commands)
        ]
        envelopes = await rt.run_envelopes(blocks)
    texts = [str(e.model.content) for e in envelopes]
    assert not any(e.is_error for e in envelopes), texts
    assert _version(git_binary) in texts[0]
    assert "+two" in texts[1] and "+one" in texts[2] and "+one" in texts[3] and "notes.txt" in texts[4], texts
