"""Red team, round 36 (supervisor): a failure reported as "no match; not an error".

`shellrt.supervisor.exit_meaning` lets a non-zero exit pass as an answer (``grep`` 1 = no match)
when that program ran last, and its status is the command's. The tokenizer found the last
*written* program, not the one whose status the shell ended with: a program before ``&&`` (its
failure skips ``grep``), a builtin that ends the shell or changes how its status forms (``exit``,
``set -e``/``-o pipefail``, ``trap ... EXIT``), or a ``#`` inside a word (bash: part of the word;
the tokenizer: a comment hiding the rest) left a failure of ANOTHER program, a repository's
``./build.sh`` included, reported as "Exit code 1 (no match; not an error)": no error result,
no sibling cancellation. Now those forms get no meaning (fail closed: exit 1 is a failure).
"""

from __future__ import annotations

import os

import pytest

from shellrt.protocol import ToolContext
from shellrt.supervisor import exit_is_error, exit_meaning
from shellrt.tools.bash import Bash, BashInput, output_is_error
from tests import test_tools_bash

#: A real supervisor over the local backend, as the Bash tool's own tests use.
ctx = test_tools_bash.ctx

#: Commands whose exit 1 may be another program's than the last one written (or no program's).
_NOT_THE_LAST = [
    "./build.sh && grep ok log",  # build.sh failed: grep never ran
    "cd sub && grep -q x f",
    "make; ./build.sh && diff a b",
    "exit 1; grep x f",
    "false || exit 1; grep x f",
    "set -e; ./build.sh; grep x f",
    "set -o pipefail; ./build.sh | grep ok",
    "set -eo pipefail; ./build.sh | grep ok",
    "shopt -so pipefail; ./build.sh | grep ok",
    "trap 'exit 1' EXIT; grep x f",
    "trap 'exit 1' ERR; grep x f",
    "{ exit 1; }; grep x f",
    "if true; then exit 1; fi; grep x f",
    "command exit 1; grep x f",
    "builtin exit 1; grep x f",
    "return 1 2>/dev/null; grep x f",
    "exec ./build.sh; grep x f",
    "./build.sh && cat log | grep ok",  # `a && (b | grep)`: the pipe binds tighter
    "./build.sh && cat log |& grep ok",
    "./build.sh >| grep",  # a redirection to a file named grep: bash never runs it
    "./build.sh >& grep",
    "./build.sh >&grep",
    # bash: `$'\' ; echo '` is one ANSI-C string, `./build.sh` runs and `#` comments grep out;
    # the tokenizer closed the quote at `\'` and read `'; ./build.sh #'` as a quoted word
    "echo $'\\' ; echo '; ./build.sh #' ; grep x f",
    "./build.sh ${y:-;grep x f}",  # one word to bash (build.sh's argument); `;` split it
    "./build.sh ${y:-|grep x f}",
    "./build.sh \\; grep x f",  # an escaped or quoted `;` is an argument, not a separator
    "./build.sh ';' grep x f",
    './build.sh "|" grep x f',
    "./build.sh '&&' ';' grep x f",
    "grep x f ${1:=x}",  # an expansion error ends the shell with 1 before grep runs
    "grep x f ${!NOPE}",
    "grep x < missing.txt",  # a failed redirection: status 1, grep never ran
    "grep x f > out/",
    "grep x f 2>>log/",
    "grep x f#; ./build.sh",  # bash: `f#` is a word; the tokenizer read a comment
    "grep x f#c; ./build.sh",
]


@pytest.mark.parametrize("command", _NOT_THE_LAST)
def test_no_meaning_when_the_last_program_written_may_not_set_the_status(command: str) -> None:
    """Failed before: 36 of 36 read exit 1 as "no match" / "files differ" (not an error)."""
    assert exit_meaning(command, 1) is None
    assert exit_is_error(command, 1)


@pytest.mark.parametrize(
    ("command", "meaning"),
    [
        ("grep x f", "no match"),
        ("cat f | grep x", "no match"),
        ("./build.sh; cat log | grep ok", "no match"),
        ("./build.sh || cat log | grep ok", "no match"),
        ("make; grep x f", "no match"),
        ("grep a f || grep b f", "no match"),  # the last runs whenever the first failed
        ("grep '#include' f", "no match"),
        ("grep x f # a comment", "no match"),
        ("grep x f # it's a comment", "no match"),
        ("grep 'x#y' f", "no match"),
        ("grep x f 2>/dev/null", "no match"),
        ("grep x f &>/dev/null", "no match"),
        ("grep x f <<< text", "no match"),
        ("grep x f > /dev/null 2>&1", "no match"),
        ('grep ";" f', "no match"),
        ("grep '#include <a>' f", "no match"),
        ("grep -E 'a|b' f", "no match"),
        ("grep -r x ${DIR:-src}/${SUB}", "no match"),
        ("grep x f 2>&1 >&2", "no match"),
        ("echo set; grep x f", "no match"),  # `set` as a word, not as the command
    ],
)
def test_plain_commands_keep_their_meaning(command: str, meaning: str) -> None:
    assert exit_meaning(command, 1) == meaning


@pytest.mark.anyio
async def test_a_repository_script_failing_before_grep_is_an_error(ctx: ToolContext) -> None:
    """End to end: a hostile ``build.sh`` prints what grep looks for and exits 1 (failed before)."""
    script = ctx.workspace / "build.sh"
    script.write_text("#!/bin/sh\necho ok\nexit 1\n")
    os.chmod(script, 0o755)
    bash = Bash()
    for command in ("set -o pipefail; ./build.sh | grep ok", "./build.sh && grep -q ok build.sh"):
        out = (await bash.call(BashInput(command=command), ctx)).data
        text = bash.to_model_content(out)
        assert out.exit_code == 1, (command, text)
        assert output_is_error(out), (command, text)
        assert "not an error" not in text, (command, text)
