"""Red team, round 37 (review3): a git hook or setting the command writes where git finds it, not
where round 37's check looked.

Round 37 (analysis) made ``cp "$x" q; cp q .git/hooks/post-checkout; git checkout .`` a command no
rule reads (``x`` held ``/bin/rm``, so no word says ``rm``), reading ``.git/hooks/<hook>`` from where
git runs and a ``--template`` directory. git finds its hooks elsewhere too: ``GIT_DIR``,
``--git-dir``, ``-C dir``, the main repository of a worktree, a submodule's ``.git/modules/m/hooks``,
``core.hooksPath`` (set by ``git config`` or ``GIT_CONFIG_*``), ``GIT_TEMPLATE_DIR``, an archive
unpacked there (``tar xf t.tar -C .git``, ``unzip -d .git/hooks``); and ``git
config core.fsmonitor ./q`` (or ``core.editor``, ``core.sshCommand``, ``alias.x '!./q'``, or
``include.path ../c`` naming a file that sets one) makes the next git command run the copy, and
``git --exec-path=. x`` runs a written ``./git-x``. Each
passed ``Bash(rm:*)`` in ``bypassPermissions``. Real git ran the copy for the ``--git-dir``,
worktree, ``core.hooksPath``, alias and include forms (below, with ``touch`` for ``rm``).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests._hidden_code import rule_misses
from tests.conftest import require

pytestmark = pytest.mark.anyio

H = "x=$(printf '/bin/\\x72m'); cp \"$x\" q; "
HOOKS = [H + f for f in [
    "mkdir -p s/.git/hooks; cp q s/.git/hooks/pre-commit; git -C s commit -m x",
    "cp q g/hooks/pre-commit; git --git-dir=g commit -m x", "cp q g/hooks/pre-commit; git --git-dir g commit -m x",
    "cp q g/hooks/pre-commit; GIT_DIR=g git commit -m x", "cp q g/hooks/pre-commit; export GIT_DIR=g; git commit -m x",
    "cp q g/hooks/pre-commit; env GIT_DIR=g git commit -m x",
    "cp q h/pre-commit; GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.hooksPath GIT_CONFIG_VALUE_0=h git commit -m x",
    "cp q h/pre-commit; git config core.hooksPath h; git commit -m x",
    "mkdir -p t/hooks; cp q t/hooks/post-checkout; GIT_TEMPLATE_DIR=t git clone u d",
    "cp q .git/modules/sub/hooks/post-checkout; git submodule update",
    "cp q .git/hooks/pre-commit; git -C w commit -m x", "mkdir d; cp q d/pre-commit; cp -r d .git/hooks; git commit -m x",
    "printf 'gitdir: g\\n' > .git; cp q g/hooks/pre-commit; git commit -m x",
    "tar cf t.tar q --transform s,q,hooks/pre-commit,; tar xf t.tar -C .git; git commit -m x",
    "zip -q z.zip q; unzip -o z.zip -d .git/hooks; git commit -m x", "rsync -a d/ .git/hooks/; git commit -m x",
    "mkdir -p g/hooks; cp q g/hooks/p4-pre-submit; GIT_DIR=g git p4 submit",
    "cp q git-lfs; git --exec-path=. lfs pull", "mkdir b; cp q b/git-x; git --exec-path=b x",
]]
CONFIG = [H + f for f in [
    "git config core.fsmonitor ./q; git status", "git config --global core.fsmonitor ./q; git status",
    "git config core.editor ./q; git commit", "git config alias.st '!./q'; git st",
    "git config core.sshCommand ./q; git fetch",
    "printf '[core]\\n\\tfsmonitor = ./q\\n' > c; git config include.path ../c; git status",
]]
KEPT = ["cp a b; git status", "echo x > f; git add f; git commit -m x", "git clone --template=t u d",
        "mkdir -p src/hooks/auth; echo x > src/hooks/auth/use.ts; git add src; git commit -m x",
        "cp a b; git config core.editor vim; git commit", "git config user.name me; git commit -m x",
        "git config core.fsmonitor ./existing.sh; git status", "cp a src/x.py; git add config src/x.py"]


async def test_a_hook_written_where_git_finds_it_is_asked(tmp_path: Path) -> None:
    assert await rule_misses(tmp_path, HOOKS, KEPT) == ([], [])


def test_a_workspace_in_a_directory_named_like_a_bare_repository_is_no_git_directory() -> None:
    """Writes are judged below the directories the git part runs in: ``~/dots.git/ws/f`` is ``f``."""
    from shellrt.analysis.unread_code import made_hook

    ws = "/home/u/dots.git/ws"
    assert made_hook("git", ["git", "commit"], [ws], [("echo x > f", [f"{ws}/f"])]) == ""
    assert made_hook("git", ["git", "commit"], [ws], [("cp q h", [f"{ws}/.git/hooks/pre-commit"])]) != ""


async def test_a_program_git_config_stores_is_asked(tmp_path: Path) -> None:
    assert await rule_misses(tmp_path, CONFIG, []) == ([], [])


def _git(cwd: Path, script: str) -> None:
    git = shutil.which("git")
    require(git is not None and shutil.which("bash") is not None, "git and bash needed")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(cwd), "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b",
           "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@b", "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["bash", "-c", script], cwd=cwd, env=env, timeout=60, capture_output=True)


@pytest.mark.parametrize("run", [
    "git init -q r; cd r; cp ../q .git/hooks/pre-commit; cd ..; git --git-dir=r/.git --work-tree=r commit -q --allow-empty -m x",
    "git init -q r; cd r; git commit -q --allow-empty -m i; git worktree add -q ../w; cp ../q .git/hooks/pre-commit; cd ..; git -C w commit -q --allow-empty -m x",
    "git init -q r; cd r; git config core.hooksPath ../h; mkdir ../h; cp ../q ../h/pre-commit; git commit -q --allow-empty -m x",
    "git init -q r; cd r; git config alias.st '!../q'; git st",
    "git init -q r; cd r; printf '[core]\\n\\tfsmonitor = ../q\\n' > c; git config include.path ../c; git status",
    "git init -q r; cd r; cp ../q git-x; git --exec-path=. x",
])
def test_real_git_runs_the_copy(tmp_path: Path, run: str) -> None:
    """The premise: git runs the copied program (``touch``, which leaves a file named like its first argument)."""
    (tmp_path / "q").write_text("#!/bin/sh\nexec touch \"$(dirname \"$0\")/../ran\" \"$PWD/../ran\"\n")
    (tmp_path / "q").chmod(0o755)
    _git(tmp_path, run)
    assert (tmp_path / "ran").exists() or (tmp_path / "r" / "ran").exists()
