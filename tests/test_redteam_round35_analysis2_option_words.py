"""Red team, round 35 (analysis, wave 3): a run-time word that may itself be an option.

``rg --pre CMD``, ``sort --compress-program=CMD``, ``find -exec CMD``, ``tar --to-command=CMD``, ``ssh
-oProxyCommand=CMD``, ``git ls-remote --upload-pack=CMD`` run a program. The engine reads such options
when they are written; a word whose value is known only at run time (``p="--pre=$x"; rg "$p" y .``, a
variable an earlier call set, an unquoted ``$p`` split into ``-exec rm {} ;``) or a glob (a file named
``--pre=./x`` in the repository) may be that option, and no rule saw it: under ``Bash(rm:*)`` denied in
``bypassPermissions`` mode every such form was allowed. A word known not to be an option (after ``--``,
an option's value, a static first character that is no ``-``) stays a word.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.analysis import option_programs, parts
from shellrt.permissions import embedded
from shellrt.permissions.modes import PERMISSION_MODES
from shellrt.tools.bash import Bash
from tests._hidden_code import rule_misses, run_bash
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide

pytestmark = pytest.mark.anyio

H = "x=$(printf '\\x72m'); "
ATTACKS = [H + f for f in [
    'p="--pre=$x"; rg "$p" y .', 'p=--pre; rg $p "$x" y .', 'p="--compress-program=$x"; sort -S 1 "$p" f',
    'p=-exec; find . $p "$x" {} +', 'p="-exec $x {} ;"; find . $p', 'p="--exec=$x"; fd "$p" .',
    'p="--upload-pack=$x"; git ls-remote "$p" .', 'p="--to-command=$x y"; tar "$p" -xf a.tar',
    'p="-oProxyCommand=$x y"; ssh "$p" h', 'p="-e$x y"; rsync "$p" a h:b', 'p="-S$x y"; env "$p"',
]] + ['rg "$p" y .', 'git "$p" z', "rg y *", "tar cf a.tar *", 'fd -e py "${p}"', "sort ?a"]
KEPT = ['rg -e "$p" .', 'rg -- "$p" .', 'rg -n --regexp="$HOME" ./src', 'rg y "./$f" src/*', 'find . -name "$n"',
        'sort -k "$k" f', 'git commit -m "$msg"', 'git log "$r"', "git add *.py", 'fd -E "$e" -- "$p"', "tar cf a.tar ./*", 'grep "$p" f']
ALLOWED = [f"Bash({n}:*)" for n in ("rg", "sort", "find", "fd", "git", "tar", "ssh", "rsync", "env")]


async def test_run_time_words_of_option_programs_are_parts(tmp_path: Path) -> None:
    assert await rule_misses(tmp_path, ATTACKS, KEPT) == ([], [])
    for mode in PERMISSION_MODES:  # asked or denied in every mode, never allowed, also beside allow rules
        got = await decide(tmp_path, Bash(), ATTACKS, mode, deny=["Bash(rm:*)"], allow=ALLOWED)
        assert [c for c, d in zip(ATTACKS, got, strict=True) if d == "allow"] == [], mode
    assert set(option_programs.OPTION_PROGRAMS) == parts._OPTION_PROGRAMS  # the gate names every program read


def test_the_permission_table_names_what_rg_and_fd_run() -> None:
    assert set(embedded._COMMAND_OPTIONS) | set(option_programs.RUNNERS) <= set(option_programs.OPTION_PROGRAMS)
    for name, options in option_programs.RUNNERS.items():
        assert options <= embedded._COMMAND_OPTIONS[name], name
    assert embedded.command_options("rg", ["rg", "--pre=./p", "y"]) == [("--pre", "./p")]
    assert embedded.command_options("fd", ["fd", "-Hx", "wc", "-l"]) == [("-x", "wc")]
    assert embedded.command_options("fd", ["fd", "--exec-batch", "rm"]) == [("--exec-batch", "rm")]


def test_a_variable_given_to_ripgrep_is_read_as_an_option(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("y\n")
    run_bash(tmp_path, H + 'p="--pre=$x"; rg "$p" y . ; :')
    assert not (tmp_path / "a").exists()
