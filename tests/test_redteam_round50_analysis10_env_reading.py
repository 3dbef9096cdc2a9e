"""Red team, round 50 (analysis10): one reading of ``env [OPTION]... [-] [NAME=VALUE]... COMMAND``.

``env``'s arguments were read in several places, each its own way: the wrapper model (which took
``=x`` and ``-`` for the command, and read ``-S``'s string with the shell's grammar, dropping the
words after it), the part names' ``env -u`` reader, round 49's ``_env_bound`` (``env``/``sudo``
NAME=VALUE words as bindings) and a ``NAME=VALUE`` regex over every part's words for deny rules. Where
two readings disagree, a rule checks what does not run: beside ``Bash(rm:*)`` denied in
``bypassPermissions``, ``env =x rm y``, ``env - rm y``, ``env -S 'rm\\_y'`` and ``env -S'timeout 5' rm y``
ran ``rm`` (GNU env 9.1 here: ``=x`` is put in the environment, ``-`` is ``-i``, ``\\_`` splits a
``-S`` string, and the words after the string are the command's). Now ``programs/env_args.read_env``
is the only reader, and the planner gives the wrapped command env's NAME=VALUE words as its
assignments (``env PS4='$(…)' bash -xc ls``: the ``bash`` command's own).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from shellrt.analysis import analyze
from shellrt.tools.bash import Bash
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide

#: Spellings GNU env reads as running ``rm y`` that an analysis reading took otherwise.
ATTACKS = [
    "env =x rm y", "env - rm y", "env -i - X=1 rm y", "env -- - rm y", "env -S 'rm\\_y'",
    "env -S'timeout 5' rm y", "env -S 'X=1' rm y", "env -iS 'nice' rm y", "env --split-string='-u X' rm y",
    "env --sp='rm\\_y'", "env -S '#c' rm y", "env -S 'rm y\\c ls'", "env -S \"r\\\"\\\"m y\"",
    "nice env =x timeout 5 env - rm y", "command env =x rm y", "exec env =x rm y",
]  # fmt: skip
#: The same programs with nothing to hide: they keep running.
KEPT = ["env X=1 ls", "env -u X ls", "env - ls", "nice env X=1 timeout 5 env Y=2 ls"]


def test_attacks_run_rm_under_the_real_env(tmp_path: Path) -> None:
    """Each attack does run ``rm y`` (GNU env here), so each is an attack and no over-reading."""
    if shutil.which("env") is None:
        pytest.skip("no env")
    script = "".join(f": > y; {c}; [ -e y ] && echo 'kept: {c!r}'\n" for c in ATTACKS)
    ran = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert "kept" not in ran.stdout, ran.stdout


@pytest.mark.anyio
async def test_env_spellings_meet_deny_rules(tmp_path: Path) -> None:
    got = await decide(tmp_path, Bash(), ATTACKS + KEPT, "bypassPermissions", deny=["Bash(rm:*)"])
    ran = [c for c, d in zip(ATTACKS, got[: len(ATTACKS)], strict=True) if d == "allow"]
    refused = [c for c, d in zip(KEPT, got[len(ATTACKS) :], strict=True) if d != "allow"]
    assert (ran, refused) == ([], [])


#: env (and sudo) NAME=VALUE operands reach the command they run, through any wrappers between.
CARRIED = [
    "env PS4='$(id)' bash -xc ls", "env -i PS4='$(id)' bash -xc ls", "env - PS4='$(id)' bash -xc ls",
    "env -u X PS4='$(id)' bash -xc ls", "env -iu X PS4='$(id)' bash -xc ls", "env -- PS4='$(id)' bash -xc ls",
    "env -C / PS4='$(id)' bash -xc ls", "env --chdir=/ PS4='$(id)' bash -xc ls", "env -v0i PS4='$(id)' bash -xc ls",
    "nice env PS4='$(id)' timeout 5 env Y=2 bash -xc ls", "sudo -E env PS4='$(id)' bash -xc ls",
    "command env PS4='$(id)' bash -xc ls", "exec env PS4='$(id)' bash -xc ls", "sudo PS4='$(id)' bash -xc ls",
    "env PS4=\"$(id)\" bash -xc ls", "PS4='$(id)' timeout 5 bash -xc ls", "env -S \"PS4='\\$(id)' bash -xc ls\"",
]  # fmt: skip


@pytest.mark.parametrize("command", CARRIED)
def test_the_wrapped_command_carries_env_assignments(command: str) -> None:
    plan = analyze(command).plan
    assert plan is not None
    shells = [c for c in plan.commands if c.argv and c.argv[0].value == "bash"]
    assert shells and all("PS4" in [a.name for a in c.assignments] for c in shells), command
    assert "PS4" in [a.name for a in plan.assignments]


#: Words env may read otherwise than any static reading: the command is not known (fail closed).
UNKNOWN = [
    "env -S '${X}' ls", "env -S 'a\\qb' ls", "env -S \"'open\" ls", "env Y=\"$@\" rm y", "env Y=$v rm y",
    "env -P x rm y", "env --i rm y", "env \"$o\" rm y",
]  # fmt: skip


def test_words_env_reads_its_own_way_are_no_static_name() -> None:
    """A part no allow rule matches (no static name) and none that names a program env does not run."""
    names = {c: sorted({s.name for s in analyze(c).subcommands}) for c in UNKNOWN}
    assert {c: n for c, n in names.items() if n != [""]} == {}
