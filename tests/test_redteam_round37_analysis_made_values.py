"""Red team, round 37 (analysis): a program the command writes, run through a value.

The engine asks when a part runs a file another part of the same command writes (``printf … > s; sh
s``, round 29), reading a program's own path, its scripts and the option table's values. A copy of a
program named at run time (``x=$(printf '/bin/\\x72m'); cp "$x" q``) run as an option's or a setting's
value was not read: ``java -XX:OnError=./q``, ``fzf --preview=./q``, ``git daemon --access-hook=./q``,
``CC=./q make``, ``npm_config_script_shell=./q npm run t``, ``GIT_CONFIG_VALUE_0=./q git status``, and
so were ``hash -p ./q ls; ls``, ``~+/q`` (the working directory's ``q``) and a hook the command writes
before git runs it (``cp q .git/hooks/post-checkout; git checkout .``, ``git clone --template=t``): each
passed ``Bash(rm:*)`` in ``bypassPermissions``. Real bash ran ``touch`` for the ``hash -p`` and ``~+`` forms (below).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._hidden_code import rule_misses, run_bash

pytestmark = pytest.mark.anyio

H = "x=$(printf '/bin/\\x72m'); cp \"$x\" q; "
ATTACKS = [H + f for f in [
    "npm_config_script_shell=./q npm run t",
    "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0=./q git status",
    "java -XX:OnError=./q -version", "java '-XX:OnOutOfMemoryError=./q y' X.java", "fzf --preview=./q",
    "fzf --preview ./q", "CC=./q make", "export CC=./q; make", "git daemon --access-hook=./q",
    "MANOPT=-P./q man ls", "BROWSER=./q man -H ls", "hash -p ./q ls; ls y", "~+/q y", "env CC=./q make",
    "pandoc --pdf-engine=./q f", "latexmk -pdflatex='./q %O %S' f",
]]
#: Hooks the command writes and git then runs (`engine.made_hook`; named writes only).
HOOKS = [H + f for f in [
    "cp q .git/hooks/post-checkout; git checkout .", "cp q ./.git/hooks/pre-commit; git commit -m x",
    "mkdir -p t/hooks; cp q t/hooks/post-checkout; git clone --template=t u d",
    "mkdir -p t/hooks; cp q t/hooks/post-checkout; git clone --template t u d",
    "ln -s \"$PWD/q\" .git/hooks/reference-transaction; git update-ref refs/heads/x HEAD",
]]
KEPT = ["fzf --preview=./preview.sh", "CC=./cc make", "java -XX:OnError=./on-error.sh -version",
        "hash -p ./tool t; t", 'cp a b; fzf --preview="cat {}"', "cp a b; CC=gcc make", "~+/tool y",
        "cp a b; git status", "echo x > f; git add f; git commit -m x", "git clone --template=t u d"]


async def test_a_program_the_command_writes_run_through_a_value_is_asked(tmp_path: Path) -> None:
    assert await rule_misses(tmp_path, ATTACKS, KEPT) == ([], [])


async def test_a_hook_the_command_writes_is_asked(tmp_path: Path) -> None:
    assert await rule_misses(tmp_path, HOOKS, []) == ([], [])


@pytest.mark.parametrize("run", ["hash -p ./q ls; ls y", "~+/q y"])
def test_real_bash_runs_the_copy(tmp_path: Path, run: str) -> None:
    """The premise: bash runs the copied program (here ``touch``) under the name a rule reads."""
    run_bash(tmp_path, "x=$(printf '/usr/bin/touc\\x68'); cp \"$x\" q; " + run)
    assert (tmp_path / "y").exists()
