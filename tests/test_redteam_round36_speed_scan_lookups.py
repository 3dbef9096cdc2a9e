"""Round 36, issue 22 item 2: the protected-files check in a git repository looks up only what
its decision needs.

The home's git-config links, once a session instead of once a scan:

`_configured_hook_dirs` asked `env_gitconfigs()` afresh on every scan for every git config of
the tree: two ``realpath`` walks of ``~/.gitconfig`` and ``~/.config/git/config`` (~25 us of a
~47 us check in a fresh ``git init``). The walk already judges user configs by the names the
session looked up when it began; the hooks-path step now uses the same. What it decides is
kept: the operator's relative ``core.hooksPath`` still names a hooks directory in the tree, and
an executable planted there is still reverted.

Where a repository's hooks run (`_work_tree`), only when a hooks path or an include needs it: a
plain ``git init`` names none (~5 us of a ~19 us check hot).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from shellrt.supervisor import _env_gitconfig, protect
from shellrt.supervisor.protect import CommandGuard, WorkspaceGuard

pytestmark = pytest.mark.anyio


async def test_a_scan_in_a_git_repository_does_not_resolve_the_home_links_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    monkeypatch.setenv("SHELLRT_HOME", str(tmp_path / "state"))
    monkeypatch.setattr(protect, "INLINE_SCAN_S", 60.0)
    # The operator's own relative hooks path: `.githooks` of every repository runs as hooks.
    (home / ".gitconfig").write_text("[core]\n\thooksPath = .githooks\n")
    ws, session = tmp_path / "ws", tmp_path / "session"
    ws.mkdir()
    session.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / ".githooks").mkdir()
    guard = CommandGuard(WorkspaceGuard(ws, session))
    try:
        await guard.before(False)
        assert await guard.after(False) == ()
        lookups = 0
        plain = _env_gitconfig._linked

        def counted(home: str) -> frozenset[str]:
            nonlocal lookups
            lookups += 1
            return plain(home)

        monkeypatch.setattr(_env_gitconfig, "_linked", counted)
        for _ in range(3):
            await guard.before(False)
            assert await guard.after(False) == ()
        assert lookups == 0, lookups  # one a scan before round 36

        await guard.before(False)
        planted = ws / ".githooks" / "pre-commit"
        planted.write_text("#!/bin/sh\necho planted\n")
        planted.chmod(0o755)
        notes = await guard.after(False)
        assert not planted.exists()
        assert any("pre-commit" in note for note in notes), notes
    finally:
        await guard.final()


async def test_a_plain_repository_scan_does_not_look_for_its_work_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SHELLRT_HOME", str(tmp_path / "state"))
    monkeypatch.setattr(protect, "INLINE_SCAN_S", 60.0)
    monkeypatch.setattr(protect, "operator_hooks_paths", lambda: ())  # an operator with no hooksPath
    ws, session = tmp_path / "ws", tmp_path / "session"
    ws.mkdir()
    session.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    guard = CommandGuard(WorkspaceGuard(ws, session))
    try:
        await guard.before(False)
        assert await guard.after(False) == ()
        asked: list[str] = []
        plain = protect._work_tree

        def counted(gitdir: str) -> str:
            asked.append(gitdir)
            return plain(gitdir)

        monkeypatch.setattr(protect, "_work_tree", counted)
        await guard.before(False)
        assert await guard.after(False) == ()
        assert asked == [], asked  # one a scan before round 36

        # A hooks path of the repository's own still names its directory (read where it runs).
        subprocess.run(["git", "-C", str(ws), "config", "core.hooksPath", ".husky"], check=True)
        (ws / ".husky").mkdir()
        await guard.before(False)
        assert await guard.after(False) == ()  # the operator's config change, accepted
        await guard.before(False)
        planted = ws / ".husky" / "pre-commit"
        planted.write_text("#!/bin/sh\necho planted\n")
        planted.chmod(0o755)
        notes = await guard.after(False)
        assert asked, "the work tree is read once a hooks path needs it"
        assert not planted.exists()
        assert any("pre-commit" in note for note in notes), notes
    finally:
        await guard.final()
