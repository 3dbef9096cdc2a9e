"""The parser-free plan of an unterminated ``'`` quote (``fastquote``) must give the parser path's verdict.

For every input ``plan_unterminated_quote`` accepts, ``analyze`` with and without the
fast paths must give identical results (plan, reasons, subcommands, everything); the
text after the quote is hostile (expansions, substitutions, backslashes, operators,
here-document markers, control characters, lookalikes) in a table and generated, and the
commands before it are tabled and generated in the fast path's shapes.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shellrt.analysis import analyze
from shellrt.analysis.analyze import _analyze_bash, clear_cache
from shellrt.analysis.fastquote import plan_unterminated_quote
from tests._fuzz import examples


def _same(command: str) -> bool:
    """True when the unterminated-quote path took ``command``; asserts both paths agree on everything."""
    if plan_unterminated_quote(command) is None:
        return False
    fast = _analyze_bash(command, fast=True).model_dump()
    slow = _analyze_bash(command, fast=False).model_dump()
    assert fast == slow, command
    return True


#: Text after the opening quote: every kind of expansion, quoting and operator bash knows.
HOSTILE_TAILS = [
    "",
    "unterminated",
    "a b c",
    "$(rm -rf /)",
    "`rm -rf /`",
    "${x:-$(rm x)}",
    "$'\\x41'",
    '\\"',
    "\\",
    "a\\",
    "$@ $1 $? $$ $!",
    "; rm -rf / #",
    " && rm x || rm y | tee z & ",
    "<<EOF",
    "<(rm x) >(rm y)",
    "> /etc/passwd",
    "{a,b}*?[x]",
    "~root",
    "!!",
    "#",
    "\t",
    "=~ ==",
    "a'",  # a second quote: refused, the quote is closed
    'a"',  # a double quote: refused
]
#: Commands before the quote (all taken by the parser-free planner); more are generated below.
PREFIXES = [
    "echo",
    "ls -la",
    "git commit -m",
    "A=1 ls",
    "cd src",
    "ls > f",
    "ls 2>&1",
    "echo $HOME",
    "export A=1",
    "find . -exec rm {} \\; -print",
    "timeout 5 bash -c",
    "sudo rm",
    "ls -",
]


@pytest.mark.parametrize("prefix", PREFIXES)
@pytest.mark.parametrize("tail", HOSTILE_TAILS)
@pytest.mark.parametrize("blank", [" ", "\t", "  "])
def test_hostile_tails_agree(prefix: str, tail: str, blank: str) -> None:
    command = f"{prefix}{blank}'{tail}"
    taken = _same(command)
    assert taken == ("'" not in tail and '"' not in tail), command


@pytest.mark.parametrize(
    "command",
    [
        "echo 'a\nrm x",  # a newline after the quote
        "echo 'a\x00",  # NUL: the parser path refuses it before parsing
        "echo 'a\x01",
        "echo 'a\x7f",
        "echo 'caf\u00e9",  # non-ASCII
        "echo '\u037e rm",  # a Greek question mark (looks like `;`)
        "echo '\uff07",  # a fullwidth apostrophe
        "echo a'b",  # no blank before the quote
        "'echo",  # nothing before it
        " 'echo",
        "ls; 'x",  # an operator before it
        "ls && 'x",
        "ls | 'x",
        "ls & 'x",
        "echo | echo | echo 'a",  # a pipeline or list before it (tree-sitter moves the last command)
        "ls | grep 'a",
        "cd src && make 'a",
        "ls; echo 'a",
        "ls 'a' 'b",  # more than one quote
        "echo \"a 'b",  # a double quote too
        "echo $(rm x) 'a",  # the text before it is not plain
        "echo ${x} 'a",
        "for f in *; do echo 'a",
        "cat <<EOF 'a",
        "echo \\ 'a",
        "r\\\nm 'a",
    ],
)
def test_refused(command: str) -> None:
    assert plan_unterminated_quote(command) is None
    clear_cache()
    assert not analyze(command).read_only


def test_the_benchmark_command_is_taken_and_fails_closed() -> None:
    command = "echo 'unterminated"
    assert _same(command)
    clear_cache()
    verdict = analyze(command)
    assert not verdict.read_only and not verdict.parse_ok and verdict.writes_unknown
    assert verdict.reasons[0] == "bash syntax error (the parser could not read the whole command)"


def test_commands_before_the_quote_are_still_seen() -> None:
    """A deny rule on ``rm`` still finds it: the subcommands before the quote are the parser's."""
    clear_cache()
    names = [part.name for part in analyze("cd /tmp && rm -rf x 'y").subcommands]
    assert names[:2] == ["cd", "rm"]


_NAMES = [
    "echo",
    "ls",
    "git",
    "cd",
    "rm",
    "sudo",
    "timeout 5",
    "bash -c",
    "env",
    "find .",
    "xargs",
    "A=1 ls",
    "export",
]
_WORDS = [
    "-la",
    "x",
    "a/b",
    "*.py",
    "$HOME",
    "2>&1",
    "> f",
    ">> f",
    "< in",
    "{}",
    "\\;",
    "-",
    "--",
    "A=b",
    "x=~",
]
_OPS = [" | ", " && ", " || ", "; ", " & ", ";", "|"]


@st.composite
def _prefixes(draw: st.DrawFn) -> str:
    """Mostly one command of the fast path's shape (some refused by it), else two or three joined by
    operators (refused by ``fastquote``: the parser path must decide those)."""
    command = ""
    for index in range(draw(st.sampled_from([1, 1, 1, 2, 3]))):
        if index:
            command += draw(st.sampled_from(_OPS))
        words = [draw(st.sampled_from(_NAMES)), *draw(st.lists(st.sampled_from(_WORDS), max_size=3))]
        command += draw(st.sampled_from([" ", "  ", "\t"])).join(words)
    return command


#: What may follow the quote in a taken command: printable ASCII but quotes, and tab (the refused characters
#: are in the table above; with them here almost no generated command would be taken).
_TAIL_ALPHABET = "ab -$`\\|&;<>(){}[]*?~=#!.,/:@%+^\t0129"


@settings(max_examples=examples(1500), deadline=None)
@given(_prefixes(), st.sampled_from([" ", "\t", "  "]), st.text(alphabet=_TAIL_ALPHABET, max_size=20))
def test_generated_commands_agree(prefix: str, blank: str, tail: str) -> None:
    _same(prefix + blank + "'" + tail)


def test_generated_commands_are_often_taken() -> None:
    """The generated test compares both paths on a real share of its inputs (else it tests nothing)."""
    taken = []

    @settings(max_examples=examples(300), deadline=None, database=None)
    @given(_prefixes(), st.text(alphabet=_TAIL_ALPHABET, max_size=20))
    def count(prefix: str, tail: str) -> None:
        taken.append(plan_unterminated_quote(prefix + " '" + tail) is not None)

    count()
    assert sum(taken) >= len(taken) // 5
