"""Red team, round 48 (analysis8): variables a loop or arithmetic binds, which no part showed.

An assignment is a part (``x=1``, ``PATH=. ls``): deny rules search its value, and under a prefix allow
rule only the names in ``SAFE_ENV_NAMES`` may be set. A ``for``/``select`` loop binds its name to each
word and arithmetic binds names too (``(( PATH=1 ))``, ``for ((PATH=1;;))``, ``[[ 1 -eq PATH=1 ]]``,
``$((HOME=1))`` in a case pattern), with no part at all: under ``Bash(ls:*)`` ``for PATH in .; do ls; done``
ran the repository's ``./ls`` unasked (``HOME`` gives git a ``.gitconfig``'s ``core.pager``), and beside
``Bash(rm:*)`` denied in ``bypassPermissions`` ``for x in 'a[$(rm y)]'; do (( x )); done`` ran ``rm y``
(real bash evaluates the subscript; the same value assigned, ``x='a[$(rm y)]'``, was denied).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from shellrt.tools.bash import Bash
from tests._hidden_code import rule_misses
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide

pytestmark = pytest.mark.anyio

DENIED = [
    "for x in 'a[$(rm y)]'; do (( x )); done", "for x in a 'a[`rm y`]'; do (( x )); done",
    'for x in "a[\\$(rm y)]"; do (( x )); done', "for x in a\\[\\$\\(rm\\ y\\)\\]; do (( x )); done",
    "for x in 'a[$(rm y)]'; do [[ x -eq 1 ]]; done", "for x in 'a[$(rm y)]'; do test x -eq 1; done",
    "for x in 'a[$(rm y)]'; do printf %d x; done", "for x in 'a[$(rm y)]'; do ls ${y:x}; done",
    "for x in 'a[$(r\"\"m y)]'; do :; done; (( x ))", "for PAGER in 'rm -rf y'; do man ls; done",
]
ALLOWED_BYPASS = ["for f in a b; do echo $f; done", "for ((i=0; i<2; i++)); do echo x; done"]
RULES = ["Bash(ls:*)", "Bash(git log:*)", "Bash(test:*)"]
ASKED = [
    "for PATH in .; do ls; done", "for HOME in .; do git log; done", "for GIT_DIR in x; do git log; done",
    "select PATH in .; do ls; done", "(( PATH=1 )); ls", "((PATH++)); ls", "(( HOME=1 )); git log",
    "for ((PATH=1; PATH<2; PATH++)); do ls; done", "[[ 1 -eq PATH=1 ]]; ls", "[[ PATH=1 -eq 1 ]] || ls",
    "case 1 in $((PATH=1))) ls;; esac", "[[ -v a[PATH=1] ]] || ls", "(( a[PATH=1] )); ls",
    "for ((i=((1)); PATH=1; )); do ls; done",
]
KEPT = ["ls -la", "git log --oneline", "(( 1 < 2 )) && ls", "[[ 1 -eq 1 ]] && ls", "test 1 -eq 1 && ls"]


async def test_a_loop_word_carrying_code_is_seen_by_deny_rules(tmp_path: Path) -> None:
    assert await rule_misses(tmp_path, DENIED, ALLOWED_BYPASS) == ([], [])


async def test_a_loop_or_arithmetic_setting_a_variable_keeps_allow_rules_off(tmp_path: Path) -> None:
    got = await decide(tmp_path, Bash(), ASKED + KEPT, "default", allow=RULES)
    allowed = [c for c, d in zip(ASKED, got[: len(ASKED)], strict=True) if d == "allow"]
    refused = [c for c, d in zip(KEPT, got[len(ASKED) :], strict=True) if d != "allow"]
    assert (allowed, refused) == ([], [])


def test_real_bash_runs_a_loop_word_and_finds_programs_by_a_loop_path(tmp_path: Path) -> None:
    """The premise: bash evaluates the loop word's subscript, and ``for PATH`` finds ``./ls``."""
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash not installed")
    (tmp_path / "ls").write_text("#!/bin/sh\n/usr/bin/touch ran2\n")
    (tmp_path / "ls").chmod(0o755)
    script = "for x in 'a[$(touch ran)]'; do (( x )); done; for PATH in .; do ls; done; (( PATH=1 ))"
    subprocess.run([bash, "-c", script], cwd=tmp_path, env={"PATH": "/usr/bin:/bin"}, capture_output=True, timeout=20)
    assert (tmp_path / "ran").exists() and (tmp_path / "ran2").exists()
