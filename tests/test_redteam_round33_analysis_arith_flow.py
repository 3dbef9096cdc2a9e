"""Red team, round 33 (analysis): a value built at run time, evaluated as arithmetic, runs code.

bash evaluates a variable named in arithmetic as an expression, and a subscript in it expands
``$(…)``: with ``v=$'b[\\x24(\\x72m x)]'`` (the text shows neither ``$(`` nor ``rm``),
``(( v ))``, ``[[ v -eq 1 ]]``, ``${a[v]}``, ``a[v]=1``, ``declare -i i=v``, ``test -v 'a[v]'``,
``trap '(( v ))' EXIT``… run ``rm x``. Earlier rounds caught a ``$(`` or ``read`` in the text;
the value can also come from ``$'…'``, pieces joined (``"${d}(${r}m x)"``), ``$_``,
``BASH_REMATCH``, a loop, ``set --``, a computed nameref. With ``Bash(rm:*)`` denied in
``bypassPermissions`` mode, 123 of 225 source-and-sink pairs bash runs were allowed before
(this file's 31 forms: 29 of 31; the other two asked). A glob may give the name itself:
``test -v *`` beside a file named ``a[$(rm x)]`` runs it (5 of 5 allowed, and ``Bash(test:*)`` allowed
it in default mode), and so may a directory's: ``cd b*; (( ${PWD##*/} ))`` (2 of 2 allowed). Decisions of the real engine, the same for every caller and
backend; the marker forms run in real bash in a temporary directory.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.analysis import analyze
from shellrt.tools.bash import Bash
from tests._hidden_code import rule_misses, run_bash
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide

pytestmark = pytest.mark.anyio

#: ``VAL`` holds ``b[$(CMD)]`` spelled so that neither ``$(`` nor the program shows.
VAL = "$'b[\\x24(\\xHIDE)]'"
FORMS = [
    "v=VAL; (( v ))", "v=VAL; [[ v -eq 1 ]]", "v=VAL; [[ 1 -lt v ]]", "v=VAL; echo ${a[v]}", "v=VAL; a[v]=1",
    "v=VAL; a+=([v]=1)", "v=VAL; declare -a c=([v]=1)", "v=VAL; declare -i i=v", "v=VAL; test -v 'a[v]'",
    "v=VAL; [[ -v a[v] ]]", "v=VAL; for (( i=v; i<0; i++ )); do :; done", "v=VAL; declare -n r=a[v]; echo $r",
    "x=abc; v=VAL; echo ${x:v}", "v=VAL; x=${a[v]}", "v=VAL; cat <<EOF\n${a[v]}\nEOF",
    "r=r; d='$'; v=\"b[${d}(${r}m x)]\"; (( v ))", "declare v=VAL; (( v ))", "export v=VAL; bash -c '(( v ))'",
    "v=VAL bash -c '(( v ))'", "f() { local v=VAL; (( v )); }; f", "for v in VAL; do a[v]=1; done",
    ": VAL; (( _ ))", "[[ VAL =~ (.*) ]]; (( BASH_REMATCH[1] ))", "v=(VAL); (( v[0] ))",
    "v=${zz:-VAL}; (( v ))", "w=VAL; v=w; (( v ))", "set -- VAL; (( $1 ))", "declare -i n; n=VAL",
    "declare -n r=$'a[\\x24(\\xHIDE)]'; echo $r", "v=VAL; trap '(( v ))' EXIT", "v=VAL; mapfile -C '(( v )); :' -c 1 a <<< x",
]
#: A glob gives the name: a repository file named ``a[$(rm x)]`` is the subscript (no binding needed).
GLOBBED = ["test -v *", "unset *", "read * < /dev/null", "printf -v * x", "test -v a?*",
           # A directory of the repository named `b[$(rm x)]` (PWD, OLDPWD, DIRSTACK: always counted).
           "cd b*; (( ${PWD##*/} ))", "mkdir $'b[\\x24(\\x72m x)]'; cd b*; (( ${PWD##*/} ))"]
#: Loops and tests whose values are all written in the command, or never evaluated: as before.
KEPT = [
    "i=0; for f in *.txt; do (( i++ )); done; echo $i", "for i in 1 2 3; do (( i > 1 )) && echo $i; done",
    "for i in {1..3}; do a[i]=$i; done", "declare -A m; for k in *; do m[$k]=1; done",
    "read -a arr < f; echo ${arr[1]}", "x=$HOME; echo ${x:0:3}", "for f in *; do test -e \"$f\" && echo \"$f\"; done",
    "printf -v line '%s' x; echo \"$line\"", "v=$'a\\tb'; echo \"$v\"",
]


def _spell(form: str, command: str) -> str:
    return form.replace("VAL", VAL).replace("\\xHIDE", command)


async def test_values_built_at_run_time_meet_deny_rules_in_arithmetic(tmp_path: Path) -> None:
    attacks = [_spell(f, "\\x72m x") for f in FORMS] + GLOBBED
    assert await rule_misses(tmp_path, attacks, KEPT) == ([], [])
    # The part says why (no rule can match it), and a read-only verdict never carries one.
    part = analyze(attacks[0]).subcommands[-1]
    assert part.name == "" and part.text == "arithmetic on a value built at run time: (( v ))"
    assert not any(analyze(c).read_only for c in attacks)
    # An allow rule for the builtin no longer covers a name the repository's files give it.
    assert await decide(tmp_path, Bash(), ["test -v *", "test -f *"], "default", allow=["Bash(test:*)"]) == [
        "ask", "allow"]


def test_bash_runs_the_hidden_command(tmp_path: Path) -> None:
    """Not a model of bash: these forms really run the command the text hides (bash 5.x)."""
    forms = ["v=VAL; (( v ))", "v=VAL; [[ v -eq 1 ]]", "for v in VAL; do a[v]=1; done", ": VAL; (( _ ))",
             "v=VAL; declare -n r=a[v]; echo $r", "v=VAL; trap '(( v ))' EXIT"]
    touch = "\\x74ouch m"  # `touch mN`, hidden as the attacks hide `rm`
    script = "\n".join(f"( {_spell(f, touch + str(i))} ) 2>/dev/null" for i, f in enumerate(forms))
    run_bash(tmp_path, script)
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"m{i}" for i in range(len(forms))]
    (tmp_path / "g").mkdir()
    (tmp_path / "g" / "a[$(touch mg)]").touch()
    run_bash(tmp_path / "g", "a=(1); test -v *")
    assert (tmp_path / "g" / "mg").exists()
