"""Red team, round 35 (analysis): a program named at run time, given to ``rg --pre`` or ``fd -x``.

ripgrep runs ``--pre CMD`` (and ``--hostname-bin CMD``) on every file it searches, fd runs ``-x``/``-X``
(``--exec``, ``--exec-batch``) on its results. The engine's option table (``command_options``) names
tar's, sort's, man's, git's… such options and refuses a value known only at run time; it has no entry
for rg and fd, and their word search finds no ``rm`` in ``x=$(printf '\\x72m'); rg --pre "$x" y .``
(which removes every file it searches): 10 of 10 such forms were allowed past ``Bash(rm:*)`` in
``bypassPermissions`` mode. Such a value (or a glob there) is a nameless part now.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.analysis import option_programs, parts
from tests._hidden_code import rule_misses, run_bash

pytestmark = pytest.mark.anyio

H = "x=$(printf '\\x72m'); "
ATTACKS = [H + f for f in [
    'rg --pre "$x" y .', "rg --pre=$x y .", "rg -i --pre $x y", 'rg --hostname-bin "$x" --hyperlink-format default y',
    "fd -x $x y", "fd -X $x", "fd --exec $x", "fd --exec=$x", "fd -Hx $x", "fdfind -x $x",
]] + ["rg --pre * y .", "fd -x ./*"]
# Wave 3: a run-time operand may itself be an option (`rg "$p" .`), and a repository script given to
# `--pre` is code no rule reads (as `sort --compress-program ./x`): both ask now under a deny rule.
KEPT = ['rg -n -e "$HOME" .', "rg --pre cat y .", "fd -e py -x wc -l", 'fd -E "$e" -- "$p"', "rg -e $x ."]


async def test_run_time_programs_of_options_are_parts(tmp_path: Path) -> None:
    assert await rule_misses(tmp_path, ATTACKS, KEPT) == ([], [])
    assert set(option_programs.RUNNERS) == parts._OPTION_RUNNERS  # the gate names every program read


def test_ripgrep_runs_its_preprocessor_on_every_file(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("y\n")
    run_bash(tmp_path, H + 'rg --pre "$x" y . ; :')
    assert not (tmp_path / "a").exists()
