"""Red team, round 37 (hooks): a wrapper's option or a variable made ``grep`` another program.

`shellrt.supervisor.exit_meaning` gives ``grep`` (``zgrep``, ``diff``, ``test``...) exit 1 its
non-error meaning when that program ran last. It skipped every option of a wrapper (``env``,
``nice``...) and judged only ``PATH`` among assignments, so the name it read was not always the
program that ran: ``env -S./build.sh grep`` runs ``build.sh`` (GNU env's ``--split-string``),
``GREP=./build.sh zgrep x f`` runs ``build.sh`` (zgrep runs ``$GREP``), ``LD_PRELOAD=./x.so grep``
loads a library that may exit 1 itself. A repository's failing build then came back as
"Exit code 1 (no match; not an error)": no error result, no sibling cancellation. Now a wrapper
option not known to be harmless, or a code-loading variable set anywhere, gives no meaning.
"""

from __future__ import annotations

import os

import pytest

from shellrt.protocol import ToolContext
from shellrt.supervisor import exit_is_error, exit_meaning
from shellrt.tools.bash import Bash, BashInput, output_is_error
from tests import test_tools_bash

ctx = test_tools_bash.ctx

_ANOTHER_PROGRAM = [
    "env -S./build.sh grep",  # --split-string: env runs build.sh with the argument grep
    "env -iS./build.sh grep",
    "env -vS./build.sh grep",
    "env --split-string=./build.sh grep",
    "cat log | env -S'./build.sh' grep ok",
    "nice -n 5 env -S./build.sh grep",
    "GREP=./build.sh zgrep x f",  # zgrep runs $GREP
    "env GREP=./build.sh zgrep x f",
    "export GREP=./build.sh; zgrep x f",
    "read -r GREP < cmd.txt; export GREP; zgrep x f",
    "declare -x GREP=./build.sh; zgrep x f",
    "export $name=./build.sh; zgrep x f",
    "LD_PRELOAD=./exit1.so grep x f",  # a preloaded library's constructor may exit 1
    "env LD_PRELOAD=./exit1.so grep x f",
    "export LD_PRELOAD=$PWD/exit1.so; grep x f",
    "LD_AUDIT=./a.so diff a b",
    "GCONV_PATH=. grep x f",
    "command -v grep",  # not grep's status at all
]


@pytest.mark.parametrize("command", _ANOTHER_PROGRAM)
def test_no_meaning_when_the_name_may_run_another_program(command: str) -> None:
    """Failed before: 17 of 18 read exit 1 as "no match" / "files differ" (not an error)."""
    assert exit_meaning(command, 1) is None
    assert exit_is_error(command, 1)


@pytest.mark.parametrize(
    "command",
    [
        "env -i grep x f",
        "env - grep x f",
        "env -u HOME grep x f",
        "env -uHOME LANG=C grep x f",
        "env --unset=HOME grep x f",
        "env -- grep x f",
        "nice -n 5 grep x f",
        "nice -n5 grep x f",
        "nice -5 grep x f",
        "nice --adjustment=5 grep x f",
        "stdbuf -oL grep x f",
        "stdbuf -o L -e 0 grep x f",
        "time -p grep x f",
        "command -p grep x f",
        "nohup grep x f",
        "LANG=C grep x f",
        "grep PATH f",
        "export FOO=1; grep x f",
    ],
)
def test_harmless_wrappers_and_assignments_keep_the_meaning(command: str) -> None:
    assert exit_meaning(command, 1) == "no match"


@pytest.mark.anyio
async def test_a_repository_script_run_through_env_or_zgrep_is_an_error(ctx: ToolContext) -> None:
    """End to end over the Bash tool (failed before: both were "no match; not an error")."""
    script = ctx.workspace / "build.sh"
    script.write_text("#!/bin/sh\necho ok\nexit 1\n")
    os.chmod(script, 0o755)
    (ctx.workspace / "f").write_text("hello\n")
    bash = Bash()
    for command in ("env -S./build.sh grep", "GREP=./build.sh zgrep zz f"):
        out = (await bash.call(BashInput(command=command), ctx)).data
        text = bash.to_model_content(out)
        assert out.exit_code == 1, (command, text)
        assert "ok" in out.output, (command, text)  # build.sh ran, not grep
        assert output_is_error(out), (command, text)
        assert "not an error" not in text, (command, text)


@pytest.mark.parametrize(
    ("command", "meaning"),
    [
        ("[[ -f a || grep ]]", "condition is false"),  # before: "no match" (`||` split the test)
        ("[[ -f a || -f b ]]", "condition is false"),  # before: no meaning
        ("[[ -f a && -f b ]]", "condition is false"),
        ("./build.sh; [[ -f a || -f b ]]", "condition is false"),
        ("grep x [[ ; ./build.sh", None),  # `[[` as an argument opens no test
        ("grep x [[ || ./build.sh ]]", None),
        ("echo [[ ; ./build.sh", None),
        ("./build.sh && [[ -f a || -f b ]]", None),
        ("[[ $n -eq 1 || -f b ]]", None),
    ],
)
def test_a_test_s_own_operators_do_not_split_it(command: str, meaning: str | None) -> None:
    """Round 36's Left: inside ``[[ ... ]]`` a ``||`` split the command (4 of 9 failed before: one
    labelled "no match", three false tests read as failures)."""
    assert exit_meaning(command, 1) == meaning
