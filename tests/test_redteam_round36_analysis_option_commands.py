"""Red team, round 36 (analysis): programs that run a command given as an option value the engine's
table (``permissions/embedded.command_options``) did not name.

``git grep -O CMD`` (``--open-files-in-pager``, attached ``-Orm``, abbreviated ``--open-files=``) runs
CMD on every file found; GNU ``split --filter=CMD`` pipes each piece to ``sh -c CMD``; gcc's
``-wrapper CMD,ARGS`` runs every tool it drives through CMD; vim's ``+CMD``/``--cmd CMD`` are Ex
commands (``+'!rm x'`` runs a shell command); ``less +!CMD`` too; ``wget --use-askpass=CMD`` and
``pandoc --filter CMD`` run CMD. Under ``Bash(rm:*)`` denied in ``bypassPermissions`` mode these
words hold no ``rm`` the word search sees (``-Orm``, ``rm,x``, ``+!rm``) or a run-time value.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from shellrt.permissions import embedded
from shellrt.tools.bash import Bash
from tests._hidden_code import rule_misses, run_bash
from tests.conftest import require
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide

pytestmark = pytest.mark.anyio

H = "x=$(printf '\\x72m'); "
ATTACKS = [
    "git grep -Orm x", "git grep -O'rm' x", "git grep -nOrm x", H + 'git grep --open-files-in-pager="$x" y',
    H + 'git grep --open-f="$x" y', "gcc -wrapper rm,x m.c", "g++ -wrapper 'rm,x' m.c", "cc -wrapper=rm,x m.c",
    "vim +'!rm x' +q f", "vi '+!rm x' f", "nvim '+!rm x' f", "view '+!rm x' f", "vim '+call system(\"rm x\")' f",
    H + 'vim --cmd "!$x y" f', "less '+!rm x' f", H + 'less "+!$x y" f', H + 'split --filter="$x y" f',
    H + 'wget --use-askpass="$x" http://127.0.0.1:9/', H + 'pandoc --filter="$x" f', H + 'pandoc -F "$x" f',
    # the option itself known only at run time (round 35's class, for these programs)
    H + 'p="--filter=$x y"; split "$p" f', H + 'w="-wrapper"; gcc $w "$x",y m.c', H + 'c="+!$x y"; vim "$c" f',
    H + 'p="--use-askpass=$x"; wget "$p" http://127.0.0.1:9/',
]  # fmt: skip
KEPT = ["vim +10 f", "vim f", "vim + f", "less +G f", "less +/foo f", "git grep -n foo", "git grep -e x",
        "git diff -Oorder.txt", "gcc -c m.c", "cc -o m m.c", "split -l 10 f", "wget http://x", "pandoc f.md -o f.html",
        'f=m.c; gcc -o m "./$f"', 'u=http://x; wget -O o -- "$u"', 'f=a; vim -- "$f"']


async def test_option_commands_meet_deny_rules(tmp_path: Path) -> None:
    assert await rule_misses(tmp_path, ATTACKS, KEPT) == ([], [])
    assert embedded.command_options("gcc", ["gcc", "-wrapper", "rm,x", "m.c"]) == [("-wrapper", "rm x")]
    assert embedded.command_options("vim", ["vim", "+!rm x"]) == [("+", "rm x")]
    assert embedded.command_options("vim", ["vim", "+10", "+", "--", "f"]) == []


@pytest.mark.parametrize("mode", ["default", "acceptEdits", "dontAsk"])
async def test_allow_rules_do_not_cover_the_command(tmp_path: Path, mode: str) -> None:
    cases = [("Bash(git grep:*)", "git grep -Orm x"), ("Bash(gcc:*)", "gcc -wrapper rm,x m.c"),
             ("Bash(vim:*)", "vim '+!rm x' f"), ("Bash(split:*)", "split --filter='rm x' f"),
             ("Bash(less:*)", "less '+!rm x' f")]
    for rule, command in cases:
        assert (await decide(tmp_path, Bash(), [command], mode, allow=[rule]))[0] != "allow", (rule, command)
    kept = [("Bash(git grep:*)", "git grep -n x"), ("Bash(vim:*)", "vim +10 f"), ("Bash(less:*)", "less +G f")]
    for rule, command in kept:
        assert await decide(tmp_path, Bash(), [command], mode, allow=[rule]) == ["allow"], (rule, command)


def test_git_grep_and_split_run_the_option_value(tmp_path: Path) -> None:
    git = shutil.which("git")
    require(git is not None, "git not installed")
    assert git is not None
    (tmp_path / "a").write_text("needle\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run([git, "init", "-q", str(tmp_path)], check=True, env=env)
    subprocess.run([git, "-C", str(tmp_path), "add", "a"], check=True, env=env)
    subprocess.run([git, "grep", "-Orm", "needle"], cwd=tmp_path, env=env, capture_output=True, timeout=30)
    assert not (tmp_path / "a").exists()  # git grep -O rm: rm on every file found
    (tmp_path / "f").write_text("1\n2\n")
    run_bash(tmp_path, "x=touch; split -l 1 --filter=\"$x y\" f")
    assert (tmp_path / "y").exists()
