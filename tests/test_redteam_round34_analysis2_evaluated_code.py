"""Red team, round 34 (analysis2): the tools' text check for code a value runs (``evaluated_code``).

``tools/_bashparts.evaluated_code`` searched the raw command text for ``$(``, ``-v "$``, ``${!``,
``@P}``, ``NAME[x`` and ``…PAGER=$``, wherever they stood, and added a part no rule matches. Text
in quotes is data, so ordinary reads met a deny rule: ``grep -v "$HOME" README.md`` (``-v "$``),
``grep -n 'name[a-z]' $(git ls-files)`` (a bracket and a substitution), ``grep -rn '${!' .``,
``printf '%s\\n' '(( x ))' "$(date)"``, ``echo "EDITOR=$EDITOR"`` were denied under ``Bash(rm:*)``
in ``bypassPermissions`` mode (5 of 5 before). The analysis' own readers now judge these
expansions from the plan: ``${x@P}`` (prompt expansion runs ``$(…)`` in the value) and ``${!x}``
(indirection evaluates a subscript in the value) on a name bound at run time; the others were
already theirs. Decisions of the real engine, the same for every caller and backend.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.tools.bash import Bash
from tests._hidden_code import rule_misses, run_bash
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide

pytestmark = pytest.mark.anyio

ATTACKS = [
    "x=$(printf '\\x24(\\x72m y)'); echo ${x@P}", "read -r x; echo \"${x@P}\"",
    "x=$(printf 'a[\\x24(\\x72m y)]'); echo ${!x}", "read -r x; echo ${!x:-d}",
    "env x=$'a[\\x24(\\x72m y)]' bash -c 'echo ${!x}'", "source <(printf '\\x72m y')",
    "read x; (( x ))", "n=$1; printf -v \"$n\" %s 1", "PAGER=$(cat p) git log",
]
KEPT = ["grep -v \"$HOME\" README.md", "grep -n 'name[a-z]' $(git ls-files)", "grep -rn '${!' .",
        "printf '%s\\n' '(( x ))' \"$(date)\"", "echo \"EDITOR=$EDITOR\"", "echo ${!BASH*} ${!a[@]}",
        "x=HOME; echo ${!x} ${x@Q}"]


async def test_expansions_of_values_are_judged_from_the_plan(tmp_path: Path) -> None:
    assert await rule_misses(tmp_path, ATTACKS, KEPT) == ([], [])
    # Refused in every mode, as a part no rule matches.
    for mode in ("default", "acceptEdits", "plan"):
        got = await decide(tmp_path, Bash(), ATTACKS[:4], mode, deny=["Bash(rm:*)"])
        assert got == ["deny"] * 4, mode


def test_bash_runs_code_in_prompt_and_indirect_expansions(tmp_path: Path) -> None:
    run_bash(tmp_path, "x=$(printf '\\x24(\\x74ouch p)'); : ${x@P}; y=$(printf 'a[\\x24(\\x74ouch i)]'); : ${!y}")
    assert (tmp_path / "p").exists() and (tmp_path / "i").exists()
