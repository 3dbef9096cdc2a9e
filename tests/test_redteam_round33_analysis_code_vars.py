"""Red team, round 33 (analysis): a variable that holds code, set by a binding that is not ``NAME=``.

``PS4`` is expanded before each traced command, ``GIT_SSH_COMMAND`` (``…PAGER``, ``…EDITOR``) is a
command line git hands to ``sh -c``. ``PS4=$…`` was refused under command rules, but ``printf -v PS4
%b '\\x24(\\x72m x)'; set -x; :``, ``read``, ``mapfile``, a ``for`` loop, a nameref and ``printf -v
GIT_SSH_COMMAND … git ls-remote ssh://…``, ``: ${GIT_EDITOR:=…}`` set it with no assignment in the
text: 9 of 9 were allowed past ``Bash(rm:*)`` in ``bypassPermissions`` mode (8 ran ``rm`` in real
bash, one is run below; git starts the editor only with a terminal). A nameref hides the name
the same way: ``declare -n r='BASH_CMDS[ls]'; r=$'/usr/bin/\\x72m'; ls x`` runs rm (2 of 2 table forms
allowed before, and ``declare -n r=PATH; r=.`` too); any nameref is now a part no rule matches.
Inside a ``trap`` string (or a ``-C`` callback) the same forms were allowed too (2 of 2, checked
in bash), and so were ``watch`` strings (2 of 2); those strings are read now.
Decisions of the real engine, the same for every caller and backend.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._hidden_code import rule_misses, run_bash

pytestmark = pytest.mark.anyio

VAL = "$'\\x24(\\x72m x)'"
ATTACKS = [
    "printf -v PS4 %b '\\x24(\\x72m x)'; set -x; :", f"read -r PS4 <<< {VAL}; set -x; :",
    f"for PS4 in {VAL}; do set -x; :; done", f"declare -n r=PS4; r={VAL}; set -x; :",
    f"v={VAL}; declare -n r=PS4; r=$v; set -x; :", f"mapfile -t PS4 <<< {VAL}; set -x; :",
    f"IFS= read PS4 <<< {VAL}; set -o xtrace; :",
    "printf -v GIT_SSH_COMMAND %b '\\x24(\\x72m x)'; export GIT_SSH_COMMAND; git ls-remote ssh://h/r",
    f": ${{GIT_EDITOR:={VAL}}}; export GIT_EDITOR; git commit --allow-empty",
    # A nameref to bash's command table or alias table: the write names neither.
    "declare -n r='BASH_CMDS[ls]'; r=$'/usr/bin/\\x72m'; ls x",
    "shopt -s expand_aliases; declare -n r=BASH_ALIASES; r[ls]=$'\\x72m'\nls x", "declare -n r=PATH; r=.; ls x",
    # The same inside code bash keeps as a string: a trap, a mapfile callback.
    "trap 'printf -v PS4 %b \"\\x24(\\x72m x)\"; set -x; :' EXIT", "trap 'declare -n r=PS4; r=1' EXIT",
    # watch hands its words to sh -c (bash where sh is bash); a nested bash -c is read anyway.
    "watch -n1 'bash -c \"printf -v PS4 %b \\\"\\\\x24(\\\\x72m x)\\\"; set -x; :\"'",
    "watch -n1 'declare -n r=PS4; r=1'",
]
KEPT = ["watch -n1 'ls -la'", "trap 'echo done' EXIT; ls", "read -r line < f; echo \"$line\"", "for f in *; do echo \"$f\"; done",
        "printf -v x %s 1; echo $x",
        "export EDITOR=vim; git status", "for PS4 in '+ '; do set -x; :; done"]


async def test_code_variables_set_at_run_time_meet_deny_rules(tmp_path: Path) -> None:
    assert await rule_misses(tmp_path, ATTACKS, KEPT) == ([], [])


def test_bash_runs_ps4_set_by_printf(tmp_path: Path) -> None:
    script = "printf -v PS4 %b '\\x24(\\x74ouch m)'; set -x; :"
    run_bash(tmp_path, script)
    assert (tmp_path / "m").exists()
