"""Red team, round 36 (analysis): a program named at run time in an option whose name says it runs one.

``permissions/embedded.command_options`` lists options that run a command per program, and round 35 left
"other options of programs with no model that run a program given at run time" open: ``x=$(printf
'\\x72m')`` then ``tig --pager="$x"``, ``gpg --photo-viewer "$x"``, ``hg --config ui.editor="$x"``,
``svn --diff-cmd="$x"``, ``cargo --config "target.x.runner='$x'"``, ``make SHELL="$x"``, ``socat -
"EXEC:$x y"``, ``fzf --bind="enter:execute($x {})"`` passed ``Bash(rm:*)`` in ``bypassPermissions`` mode
(no word says ``rm``). Listing every program never ends, so the rule reads the option's name: a
run-time value of an option or setting whose name ends in ``cmd``, ``command``, ``exec``, ``pager``,
``editor``, ``shell``, ``viewer``, ``browser``, ``runner``, ``helper``… (or after ``EXEC:``,
``execute(``) is a command no rule can read.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.permissions import embedded
from tests._hidden_code import rule_misses, run_bash

pytestmark = pytest.mark.anyio

H = "x=$(printf '\\x72m'); "
ATTACKS = [H + f for f in [
    'tig --pager="$x"', 'mysql --pager="$x y"', 'psql -P pager="$x y"', 'psql --pset=pager="$x"',
    'gpg --photo-viewer "$x" --list-keys', 'ranger --cmd="shell $x y"', 'fzf --preview="$x {}"',
    'fzf --bind="enter:execute($x {})"', 'dpkg --pre-invoke="$x y" -i a.deb',
    'apt-get -o APT::Update::Pre-Invoke::="$x y" update', 'bazel run --run_under="$x" //x',
    'cargo --config "target.x.runner=\'$x\'" run', 'go build -toolexec="$x" .', 'npm run --script-shell="$x" b',
    'yarn --script-shell="$x"', 'hg --config ui.editor="$x" commit', 'svn --editor-cmd="$x" commit',
    'svn --diff-cmd="$x" diff', 'svn --config-option="config:helpers:diff-cmd=$x" diff', 'rclone --password-command="$x" ls r:',
    'restic --password-command="$x" snapshots', 'borg --passcommand="$x" list', 'borg --rsh "$x" list',
    'git web--browse --browser="$x" x', 'git instaweb --httpd="$x"', 'socat - "EXEC:$x y"', 'socat - "SYSTEM:$x y"',
    'make SHELL="$x" .SHELLFLAGS=', 'unison -sshcmd "$x" a b',
]] + ["socat - EXEC:'rm x'", "socat - 'SYSTEM:rm x'", "socat TCP-LISTEN:9 exec:rm,pty"]
KEPT = ['tig --pager=less', "mysql --pager='less -S'", 'docker ps --filter "status=$s"', "less -exec x",
        'curl --max-time "$t" u', 'socat - TCP:h:80', "echo '--pager=$x'", 'echo "EDITOR=$EDITOR"']


async def test_run_time_programs_in_named_options_meet_deny_rules(tmp_path: Path) -> None:
    assert await rule_misses(tmp_path, ATTACKS, KEPT) == ([], [])
    assert embedded.command_options("tig", ["tig", "--pager=$x"]) == [("--pager", "--pager=$x")]
    assert embedded.command_options("tig", ["tig", "--pager='$x'"]) == []  # single quotes: text


def test_make_runs_the_shell_it_is_given(tmp_path: Path) -> None:
    (tmp_path / "Makefile").write_text("all:\n\ty\n")
    run_bash(tmp_path, 'x=$(printf "\\x74ouch"); make SHELL="$x" .SHELLFLAGS=')
    assert (tmp_path / "y").exists()  # make ran `touch y`: the recipe given to the program in SHELL
