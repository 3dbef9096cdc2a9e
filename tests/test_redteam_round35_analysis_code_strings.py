"""Red team, round 35 (analysis): code strings of ``mapfile -C``, ``compgen -C`` and ``compgen -W``.

bash runs a ``mapfile``/``readarray -C`` callback and a ``compgen -C`` command as shell code, and
expands every word of ``compgen -W``'s list (``$(…)`` included). Round 33 read those callbacks for
its hidden-code checks only, so the commands inside were no parts: with the program's name built
at run time (``x=$(printf '\\x72m'); $x y``) the engine's word search found nothing and ``Bash(rm:*)``
denied nothing in ``bypassPermissions`` mode; clustered options (``-tC``, ``-fC``) and ``-W`` were
not read at all (11 of 11 allowed), nor a value known only at run time (3 of 3 allowed, added
later). Now the parts of every code string bash keeps are parts of the command, an unknown one nameless.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.tools.bash import Bash
from tests._hidden_code import rule_misses, run_bash
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide

pytestmark = pytest.mark.anyio

HIDE = 'x=$(printf "\\x72m"); $x y'
ATTACKS = [
    f"mapfile -C '{HIDE} #' -c 1 < f", f"mapfile -tC '{HIDE} #' -c 1 < f", f"readarray -c1 -tC'{HIDE} #' < f",
    f"compgen -C '{HIDE}' z", f"compgen -fC '{HIDE}' z", f"complete -C '{HIDE}' z",
    f"compgen -W '$({HIDE})' z", f"compgen -fW '$({HIDE})' z", f"compgen -W'$({HIDE})' z",
    f"compgen -W '${{v:=$({HIDE})}}' z", f"compgen -o default -W '`{HIDE}`' z",
    # A value known only at run time: the callback, or a list bash expands once more.
    "x=$(printf '\\x72m'); compgen -C \"$x y\" z", "x=$(printf '\\x72m'); compgen -fC \"$x y\" z",
    f"v='$({HIDE})'; compgen -W \"$v\" z",
]
KEPT = ["compgen -W 'start stop status' st", "mapfile -t a < f", "compgen -c ls", "compgen -A function",
        "mapfile -C 'echo' -c 1 < f", "compgen -W 'a b' -- a"]


async def test_code_strings_of_builtins_are_parts(tmp_path: Path) -> None:
    assert await rule_misses(tmp_path, ATTACKS, KEPT) == ([], [])
    for mode in ("default", "acceptEdits", "plan"):
        got = await decide(tmp_path, Bash(), [ATTACKS[1], ATTACKS[4], ATTACKS[6]], mode, deny=["Bash(rm:*)"])
        assert got == ["deny"] * 3, mode


def test_bash_runs_the_callbacks_and_expands_the_word_list(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("line\n")
    hide = 'x=$(printf "\\x74ouch"); $x'
    run_bash(tmp_path, f"mapfile -tC '{hide} m #' -c 1 < f; compgen -fC '{hide} c' z; "
                       f"compgen -fW '$({hide} w)' z")
    assert [(tmp_path / n).exists() for n in "mcw"] == [True, True, True]
