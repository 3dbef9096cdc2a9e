"""Red team, round 32 (readonly): a git option that takes ``--`` as its value.

The option model of git reads most value options attached-only (``--decorate-refs=x``) and a ``--``
as the end of options. git's own option parser gives a required value the next word, whatever it
is: ``git log --decorate-refs -- --output=f`` takes ``--`` as the pattern and then opens ``f`` for
writing (the log goes there), ``git blame --contents -- --output=f x`` truncates ``f``. Those forms
were judged read-only, so they ran unasked in default mode. Also ``git config edit`` (git 2.46's
verb: it opens an editor) was read as a lookup of the key ``edit``. And in PowerShell, pwsh 7.2 and
Windows PowerShell drop an unquoted ``--`` given to a native program (PowerShell#16592), so
``git log -- --output=f`` there is ``git log --output=f`` (they drop empty arguments too): every
reading must be read-only. Decisions only (the analysis
and the real engine), the same for root and non-root callers and on every backend; one real git
run shows the write is real.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from shellrt.analysis import analyze
from shellrt.analysis.git_env import git_hardening_env
from shellrt.tools.bash import Bash
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide

#: git reads ``--`` as the value of the option before it; the words after it are options again.
DASHDASH_VALUE = [
    "git log --decorate-refs -- --output=f",
    "git log --decorate-refs-exclude -- --output=f --format=%B",
    "git show --decorate-refs -- --output=f",
    "git whatchanged --decorate-refs -- --output=f",
    "git log -L -- --output=f",
    "git stash list --decorate-refs -- --output=f",
    "git reflog show --decorate-refs -- --output=f",
    "git blame --contents -- --output=f x",
    "git blame --ignore-revs-file -- --output=f x",
    "git blame --since -- --output=f x",
    "git blame -L -- --contents -- --output=f x",
    "git shortlog --since -- --output=f HEAD",
    "git shortlog --author -- --output=f HEAD",
    "git describe --match -- --dirty",
    "git branch --contains -- -l",
    "git config --file -- --edit",
    "git --no-pager log --decorate-refs -- --output=f",
]
#: git 2.46's verbs: a bare word is a subcommand there (``edit`` opens an editor), not a key.
CONFIG_VERBS = ["git config edit", "git config -f x edit", "git config --global edit", "git config e"]
#: Common forms that stay read-only: a flag, an optional value or an attached one before ``--``.
KEPT = [
    "git log --stat -- f", "git diff --stat -- f", "git diff --color -- f", "git log --oneline -- f",
    "git log --decorate -- f", "git log -n 5 -- f", "git log -5 -- f", "git log --format=%H -- f",
    "git log --decorate-refs=x -- f", "git diff --cached -- f", "git diff -M -- f", "git status -u -- f",
    "git status --porcelain -- f", "git blame -L 1,2 -- f", "git log -p -- f", "git diff --word-diff -- f",
    "git log --follow -- f", "git config user.name", "git config --get user.name", "git config list",
    "git show --abbrev -- f", "git cat-file --batch -- x",
]


#: PowerShell: the same commands with the first unquoted ``--`` dropped write or run a program.
PWSH_DROPPED = [
    "git log -- --output=f", "git diff -- --output=f", "git show -- --output=f", "git blame -- --output=f x",
    "rg -- --pre=sh x", "fd -- -x rm", "man -- -P sh ls", "git grep x -- -Osh", "tree -- -o f",
    # ... and every empty argument: the `--` after it becomes the option's value again
    "git log --decorate-refs '' '--' --output=f", 'git blame --contents "" \'--\' --output=f x',
]
#: ... and stay read-only when ``--`` is quoted (passed on by every version) or harmless either way.
PWSH_KEPT = ["git log '--' --output=f", 'git log "--" f', "git log -- f", "git diff --stat -- f", "grep -- -x f",
             "git log '' -n 1"]


def test_pwsh_reads_a_native_program_with_and_without_its_dashdash() -> None:
    assert [c for c in PWSH_DROPPED if analyze(c, shell="powershell").read_only] == []
    assert [c for c in PWSH_KEPT if not analyze(c, shell="powershell").read_only] == []


def test_a_dashdash_value_or_a_config_verb_is_not_read_only() -> None:
    judged = [c for c in DASHDASH_VALUE + CONFIG_VERBS if analyze(c).read_only]
    assert judged == []
    assert [c for c in KEPT if not analyze(c).read_only] == []



@pytest.mark.anyio
async def test_the_engine_asks_in_default_mode(tmp_path: Path) -> None:
    calls = DASHDASH_VALUE[:3] + DASHDASH_VALUE[7:8] + CONFIG_VERBS[:1]
    assert await decide(tmp_path, Bash(), calls, "default") == ["ask"] * len(calls)
    assert await decide(tmp_path, Bash(), ["git log --stat -- f"], "default") == ["allow"]


def test_real_git_writes_through_the_dashdash_value(tmp_path: Path) -> None:
    """The write is real (git 2.39 here): with the hardening environment of read-only commands."""
    git = shutil.which("git")
    if git is None:
        if os.environ.get("CI") == "true":
            pytest.fail("git is missing")
        pytest.skip("git is missing")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), **git_hardening_env()}

    def run(*args: str) -> None:
        subprocess.run([git, *args], cwd=tmp_path, env=env, capture_output=True, timeout=20, check=False)

    run("init", "-q")
    (tmp_path / "x").write_text("x\n")
    run("add", "x")
    run("-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qm", "planted text")
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    run("log", "--decorate-refs", "--", "--output=victim", "--format=%B")
    assert victim.read_text() == "planted text\n\n"
    victim.write_text("keep\n")
    run("blame", "--contents", "--", "--output=victim", "x")
    assert victim.read_text() == ""
