"""Red team, round 17 (classifier): a process substitution in a ``[[ ]]`` pattern ran unseen.

tree-sitter-bash reads the right operand of ``=~`` (and a glued extglob pattern) as one ``regex``
node: plain text. bash expands it first, and ``<(…)``/``>(…)`` there is a process substitution,
even glued to other pattern text: ``[[ x =~ <(touch P) ]]``, ``[[ x =~ a>(…) ]]``,
``[[ x =~ x|<(…) ]]``, ``[[ x =~ @(<(…)) ]]``, ``[[ x =~ ^(a|<(…))$ ]]`` all run the command. The
check that refused ``$(``/backticks/``${`` in a pattern did not look for ``<(``/``>(``, so these
were read-only ("only tests and comparisons"), run unasked in default mode, with no part at all
for a rule to see. A pattern holding ``<(``/``>(`` is now a disagreement between the grammar and
bash (a syntax error: ``parse_ok`` false, no allow rule meets any part), and ``$[`` joins the
unsafe markers.

The second half is a small class-wide differential generator (the brief's item 2): data
positions bash evaluates (``[[ -v ]]``, ``(( ))``, ``${x[...]}``, ``declare -i``, ``printf -v``,
``read -a``, ``test -v``, ``${x@P}``, ``mapfile -C``, ``trap``, ``exec {fd}>``, ...) times payloads
(command and process substitutions, subscripts) times quoting (``'…'``, ``"…"``, ``$'…'``,
``$"…"``); every form judged read-only is run by real bash in its own directory, and none may
leave a marker. Found the class above (3 of 5,728 generated forms); 0 after.
"""

from __future__ import annotations

import itertools
import subprocess
import time
from pathlib import Path

import pytest

from shellrt.analysis import analyze

#: Read-only before this round (checked on main: 8 of 8); bash runs the command in each.
FORMS = [
    "[[ x =~ <(touch P) ]]",
    "[[ x =~ >(touch P) ]]",
    "[[ x =~ a>(touch P) ]]",
    "[[ x =~ x|<(touch P) ]]",
    "[[ x =~ @(<(touch P)) ]]",
    "[[ x =~ ^(a|<(touch P))$ ]]",
    "if [[ x =~ <(touch P) ]]; then :; fi",
    "{ [[ x =~ <(touch P) ]]; }",
]
#: Patterns that stay read-only.
KEPT = ["[[ x =~ ^a.*b$ ]]", "[[ $s =~ $re ]]", "[[ x =~ (a|b) ]]", "[[ x == a* ]]", "[[ x =~ [<>] ]]"]


def _run(command: str, where: Path) -> None:
    """Run ``command`` in real bash in a new directory ``where``."""
    where.mkdir()
    subprocess.run(["bash", "-O", "extglob", "-c", command + "\nwait"], cwd=where, stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30, check=False)


def _left_something(where: Path, tries: int = 100) -> bool:
    # A process substitution runs asynchronously: give it a moment (generous: shared cores).
    for attempt in range(tries):
        if any(where.iterdir()):
            return True
        if attempt + 1 < tries:
            time.sleep(0.05)
    return False


def _bash(command: str, where: Path) -> bool:
    """Run ``command`` in real bash in ``where``; whether it left anything there."""
    _run(command, where)
    return _left_something(where)


@pytest.mark.parametrize("command", FORMS)
def test_process_substitution_in_a_pattern_is_not_read_only(command: str, tmp_path: Path) -> None:
    assert _bash(command, tmp_path / "run"), "premise: bash runs the process substitution"
    result = analyze(command)
    assert not result.read_only
    assert not result.parse_ok  # a grammar/bash disagreement: no allow rule meets any part
    assert any("process substitution" in r for r in result.reasons), result.reasons


@pytest.mark.parametrize("command", KEPT)
def test_plain_patterns_stay_read_only(command: str) -> None:
    assert analyze(command).read_only, analyze(command).reasons


_PAY = ["$(touch P)", "`touch P`", "$(>P)", "<(touch P)", ">(touch P)", "a[$(touch P)]", "x|<(touch P)"]
_CTX = [
    "[[ -v {p} ]]", "(( {p} ))", "echo ${{a[{p}]}}", "declare -i x={p}", "printf -v {p} x", "read -a {p} </dev/null",
    "test -v {p}", "[ -v {p} ]", "echo $(( {p} ))", "echo ${{x@P}}", "mapfile -C {p} a </dev/null", "trap {p} EXIT",
    "exec {{fd}}>P", "cat {p}", "echo {p}", "[[ {p} -eq 1 ]]", "test 1 -eq {p}", "{{ ls; }} {p}", "ls # {p}",
    "echo x \\\n{p}", "[[ x =~ {p} ]]", "[[ x == {p} ]]", "[[ x != @({p}) ]]", "echo ${{x:{p}}}", "let {p}",
    "printf '%d' {p}", "kill -l {p}", "type {p}", "dirs {p}", "seq {p}", "date -d {p}",
]
_QUOTE = ["{}", "'{}'", '"{}"', "$'{}'", '$"{}"']


def test_generated_forms_judged_read_only_leave_no_marker(tmp_path: Path) -> None:
    forms = [ctx.format(p=quote.format(pay)) for ctx, pay, quote in itertools.product(_CTX, _PAY, _QUOTE)]
    read_only = [form for form in forms if analyze(form).read_only]
    assert read_only  # the generator reaches read-only forms (a check that can fail)
    scripts, runs = tmp_path / "scripts", tmp_path / "runs"
    scripts.mkdir()
    runs.mkdir()
    for n, form in enumerate(read_only):
        (scripts / str(n)).write_text(form + "\n")
        (runs / str(n)).mkdir()
    # One bash: each form sourced in a subshell in its own directory (a fork, no exec per form).
    driver = f'for n in $(ls {scripts}); do (cd {runs}/$n && . {scripts}/$n) </dev/null >/dev/null 2>&1; done; wait'
    subprocess.run(["bash", "-O", "extglob", "-c", driver], stdin=subprocess.DEVNULL, timeout=120, check=False)
    time.sleep(1)  # once for all: anything a form started in the background has ended by now
    misses = [form for n, form in enumerate(read_only) if _left_something(runs / str(n), tries=1)]
    assert not misses, misses
