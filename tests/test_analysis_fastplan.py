"""The parser-free fast path (``fastplan``) must plan exactly like the tree-sitter path.

For every input ``plan_simple`` accepts, ``analyze`` with and without the fast path
must give identical results (plan, verdict, reasons, subcommands, everything);
inputs outside its strict subset must be refused (None) so the parser decides.
"""

from __future__ import annotations

import itertools
import json
import re
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.bench_classify import CORPUS
from shellrt.analysis import analyze
from shellrt.analysis.analyze import _analyze_bash
from shellrt.analysis.fastplan import (
    _WORD,
    MAX_COMMANDS,
    PLAIN_TOKEN_SPEC,
    TOKEN_SPEC,
    _is_name,
    _quoted_word,
    plan_simple,
    scan_plain_tokens,
    scan_tokens,
)
from shellrt.analysis.words import DQ_WHOLE_FEATURES, QUOTED_FEATURES
from tests._fuzz import examples
from tests.test_analysis_corpus import NOT_READ_ONLY, READ_ONLY
from tests.test_analysis_property import SAFE, UNSAFE


def _same(command: str) -> bool:
    """True when the fast path took ``command``; asserts both paths agree on everything."""
    if plan_simple(command) is None:
        return False
    fast = _analyze_bash(command, fast=True).model_dump()
    slow = _analyze_bash(command, fast=False).model_dump()
    assert fast == slow, command
    return True


TABLE = sorted(set(NOT_READ_ONLY + READ_ONLY + UNSAFE + SAFE + CORPUS))
#: The table commands the fast path takes (every other table command it must refuse). Re-record after an
#: intended change with ``python -m tests.test_analysis_fastplan --write`` and say why in the commit.
FAST_TAKES = Path(__file__).with_name("analysis_fastpath.json")


def _fast_takes() -> set[str]:
    data: list[str] = json.loads(FAST_TAKES.read_text(encoding="utf-8"))
    return set(data)


@pytest.mark.parametrize("command", TABLE)
def test_tables_agree(command: str) -> None:
    """Each case states whether the fast path takes it; taken ones must plan exactly like the parser."""
    expected = command in _fast_takes()
    taken = _same(command)
    assert taken == expected, f"the fast path {'now takes' if taken else 'no longer takes'} {command!r}"
    if not taken:
        assert plan_simple(command) is None
        # Declined: the parser path alone decides, and it still matches the verdict tables.
        if command in NOT_READ_ONLY or command in UNSAFE:
            assert not analyze(command).read_only, command
        elif command in READ_ONLY or command in SAFE:
            assert analyze(command).read_only, command


def test_fast_path_takes_a_real_share_of_the_tables() -> None:
    assert len(_fast_takes()) * 3 > len(TABLE)
    assert _fast_takes() <= set(TABLE)


def test_fast_path_covers_the_common_shape() -> None:
    taken = [
        c
        for c in [
            "ls -la",
            "git log --oneline -n 20",
            "cd src && git status",
            "ps aux | grep python",
            "grep -rn 'foo' src/ --include='*.py'",
            "npm run build 2>&1 | tail -n 20",
            'echo "hello world" > out.txt',
            "wc -l src/*.py",
            "timeout 5 bash -c 'sleep 1; ls'",
        ]
        if _same(c)
    ]
    assert len(taken) == 9


@pytest.mark.parametrize("n", range(1, 6))
def test_every_list_shape_agrees(n: int) -> None:
    """All operator sequences (and a trailing redirection or `;`) up to five commands.

    Run once up to MAX_COMMANDS (seven) when the shape rules were written; five keeps the suite quick.
    """
    for ops in itertools.product(["|", "&&", "||", ";"], repeat=n - 1):
        for mask in itertools.product([0, 1], repeat=n):
            parts = [f"c{i} x" + (" 2>o" if mask[i] else "") for i in range(n)]
            command = parts[0] + "".join(f" {op} {part}" for op, part in zip(ops, parts[1:], strict=True))
            expected = _regular(list(ops), list(mask))
            assert _same(command) is expected, command
            assert _same(command + ";") is expected, command


def _regular(ops: list[str], mask: list[int]) -> bool:
    """The shapes the module doc promises to take: no redirection on a piped command other than the
    first of its pipeline, and no pipeline of three or more commands followed by ``&&``/``||``."""
    run = 1
    for index, op in enumerate([*ops, ""]):
        if op == "|":
            if mask[index] and run > 1:
                return False
            run += 1
        else:
            if run >= 3 and op in ("&&", "||"):
                return False
            run = 1
    return True


@pytest.mark.parametrize(
    "command",
    [
        "ls $x$y",
        "ls ${x}",
        'ls "$x"',
        "ls `id`",
        "ls $(id)",
        "ls \\x",
        "r\\m x",
        "ls ~",
        "ls ~/x",
        "ls {a,b}",
        "ls a[1]",
        "ls\nrm x",
        "ls |& cat",
        "ls & & ls",
        "ls &;",
        "& ls",
        "ls &&& ls",
        "ls &>f",
        "ls &>>f",
        "ls 2>&1&",
        "x=1",
        "x=1 y=2",
        "x=1 && ls",
        "ls && x=1",
        "x=1 > f",
        "x= ls",
        "x=~/a ls",
        "x=a:~/b ls",
        "x=a=b ls",
        "x='a' ls",
        'x="a" ls',
        "x=*.py ls",
        "x=a? ls",
        "x=$y ls",
        "x=(a) ls",
        "x=a\\ ls",
        "1x=1 ls",
        "x+=1 ls",
        "x[1]=a ls",
        "-x=1 ls",
        "x=é ls",
        "ls {}x",
        "ls x{}",
        "ls {};",
        "ls { }",
        "ls {} {",
        "{} ls",
        "ls \\;x",
        "ls x\\;",
        "ls \\;;",
        "\\; ls",
        "ls \\:",
        'ls "x" \\;',
        "ls > \\;",
        "ls > {}",
        "declare x",
        "local x",
        "unset x",
        "if true; then ls; fi",
        "cat <<EOF\nx\nEOF",
        "cat <<< x",
        "(ls)",
        "{ ls; }",
        "ls # comment",
        "ls #",
        "! ls",
        "[[ -f x ]]",
        "[ -f x ]",
        "'ls' x",
        '"ls" x',
        "ls;;",
        "ls; ;",
        "ls |",
        "ls &&",
        "| ls",
        "",
        "   ",
        "ls 2>&1 x",
        "ls > out x",
        "cat - 2>&1",
        "cat - 2>/dev/null",
        "uniq == out",
        "uniq a =~ b",
        "cat 0<f",
        "cat <>f",
        "cat >|f",
        "cat &>f",
        "ls 2>&-",
        "ls a2>o",
        "ls 'a\tb'",
        "echo é",
        "echo 'é'",
        "ls\x01",
        "echo '*'*",
        'echo "a"?',
        "ls -la | a | b | c && d",
        "a | b 2>o | c",
        "time ls",
        "coproc ls",
        'echo "$HOME"',
        'echo "`id`"',
        'echo "a\\b"',
        'echo "!x"',
        "echo 'a",
        'echo "a',
        "ls " + "; ls" * MAX_COMMANDS,
        "-x",
        "a=b",
        "%1",
    ],
)
def test_refused(command: str) -> None:
    assert plan_simple(command) is None, command


@pytest.mark.parametrize(
    "command",
    [
        "ls ~/x",
        "ls ~",
        "cat a~b | wc -l",
        "ls a ~b && ls",
        "ls & ls",
        "ls &",
        "ls&&ls",
        "a||b;c|d",
        "ls&",
        "ls&ls",
    ],
)
def test_plain_tokenizer_agrees(command: str) -> None:
    """Commands with no quote, glob or redirection take the simpler tokenizer: same plans (or refusal)."""
    _same(command)
    if command.startswith("ls ~") or " ~" in command:
        assert plan_simple(command) is None, command


@pytest.mark.parametrize(
    "command",
    [
        "sleep 10 &",
        "ls & rm x",
        "a && b &",
        "a | b &",
        "a; b && c & d",
        "a & b & c &",
        "timeout 5 rm x & ls",
        "bash -c 'ls; rm x' &",
        "nohup python server.py > server.log 2>&1 &",
        "cd /tmp & ls",
        "FOO=bar env | grep FOO",
        "A=1 B=2 ls x",
        "PYTHONPATH=src:lib python -m app",
        "CI=1 npm test -- --watch=false",
        "GIT_DIR=/tmp/x git status",
        "A=1 timeout 5 rm x",
        "A=1 bash -c 'B=2 ls'",
        "A=1 cd /tmp && ls",
        "A=-1 ls > out &",
        "find . -exec rm {} \\;",
        "find . -name '*.py' -exec grep -l x {} +",
        "find . -type f -exec chmod 644 {} \\; -print",
        "xargs -I {} cp {} dst/",
        "echo {} \\;",
        "ls \\; ;",
    ],
)
def test_new_shapes_are_taken_and_agree(command: str) -> None:
    """Background jobs, plain env prefixes and find -exec's words plan exactly like the parser path."""
    assert _same(command), command


@pytest.mark.parametrize("n", range(1, 5))
def test_every_list_shape_with_background_jobs_agrees(n: int) -> None:
    """All operator sequences with ``&`` among them (and a trailing ``&``), up to four commands."""
    for ops in itertools.product(["|", "&&", "||", ";", "&"], repeat=n - 1):
        for mask in itertools.product([0, 1], repeat=n):
            parts = [f"c{i} x" + (" 2>o" if mask[i] else "") for i in range(n)]
            command = parts[0] + "".join(f" {op} {part}" for op, part in zip(ops, parts[1:], strict=True))
            expected = _regular(list(ops), list(mask))
            if "&" in ops or n == 1:
                assert _same(command) is expected, command
            assert _same(command + " &") is expected, command


@pytest.mark.parametrize(
    "command",
    [
        "echo $PATH",
        "echo $PATH;ls",
        "echo $IFS | wc -c",
        "ls $x|wc",
        "ls $x&",
        "ls $x & rm $y",
        "ls\t$x",
        "grep -r $PATTERN src/ > out",
        "cd $HOME && ls",
        "cd - $x",
        "timeout 5 $CMD x",
        "sudo $CMD",
        "bash -c $SCRIPT",
        "env $A ls",
        "xargs $x",
        "find . -exec $CMD {} \\;",
        "find . -exec rm $x {} +",
        "A=1 ls $x",
        "echo '$x' $y \"a\"",
        "git $SUB",
        "git -c $CFG status",
        "rm $x",
        "cat $x 2>&1 | tail",
        "cd src && make $T 2>&1 | tail",
    ],
)
def test_parameter_words_agree(command: str) -> None:
    """A whole ``$NAME`` argument is a dynamic word, planned as the parser's ``simple_expansion``."""
    assert _same(command), command


@pytest.mark.parametrize(
    "command",
    [
        "$x",
        "$x ls",
        "ls; $x",
        "A=1 $x",
        "A=$x ls",
        "export A=$x",
        "ls > $f",
        "ls 2>$f",
        "ls < $f",
        "ls $x>f",
        "ls $x<f",
        "echo a$x",
        "echo $x$y",
        "echo $x/y",
        "cd $HOME/x && ls",
        "echo $1",
        "echo $@",
        "echo $?",
        "echo $$",
        "echo $!",
        "echo $#",
        "echo $-",
        "echo $*",
        "echo ${x}",
        "echo ${x@P}",
        "echo ${!x}",
        "echo ${x:-$(rm y)}",
        "echo $'\\x72m'",
        '$"x"',
        "echo $(rm x)",
        "echo $((1+2))",
        "echo $é",
        "echo $x\r",
        "echo $x\n",
        "echo $x\\",
        "echo $x\\\nrm",
        "echo $x'a'",
        'echo $x"a"',
        'echo "$x"',
        "echo $x=y",
        "echo $x{}",
        "echo $x#",
        "echo $x[0]",
        "echo $a[$(id)]",
        "echo $x <<< y",
        "echo $",
        "echo $ x",
        "[ $x = y ]",
        "[[ $x ]]",
    ],
)
def test_parameter_words_refused(command: str) -> None:
    """Anything but a whole ``$NAME`` argument word (special parameters, braces, names, targets) goes to the parser."""
    assert plan_simple(command) is None, command


@pytest.mark.parametrize(
    "command",
    [
        "export PYTHONPATH=src && python -m app",
        "export A=1",
        "export A=1;",
        "export A=1 B=2; ls",
        "export A=1 && make 2>&1 | tail",
        "cd x && export A=1; ls",
        "ls; export A=a:b/c.d,e@f%g+h-i",
        "export export=1",
        "export A=1 ; export B=2 && cd x",
        "export A=1 || rm -rf x",
        "export GIT_DIR=/tmp/x && git status",
        "export PAGER=less; git log",
        "export LD_PRELOAD=/tmp/x.so && ls",
        "export BASH_ENV=/tmp/x && bash -c ls",
        "export PATH=/tmp/bin:/usr/bin && ls",
        "export A=1 && timeout 5 bash -c 'ls; rm x'",
        "export A=1 && find . -exec rm {} \\;",
        "export A=1 && echo $A",
    ],
)
def test_export_declarations_agree(command: str) -> None:
    """``export NAME=value ...`` with plain values is a declaration part and an ``export`` construct, as the
    parser path plans it (the judgement says the environment changes)."""
    assert _same(command), command
    assert not analyze(command).read_only, command


@pytest.mark.parametrize(
    "command",
    [
        "export",
        "export A",
        "export A=1 B",
        "export -f f",
        "export -n A=1",
        "export -p",
        "export A+=1",
        "export A=",
        "export A=$x",
        "export A=$(id)",
        "export A=`id`",
        "export A=b$x",
        "export A='x y'",
        'export A="$HOME"',
        "export A=~/x",
        "export A=*",
        "export a[$(id)]=1",
        "export a[0]=1",
        "export A=1 2>/dev/null",
        "export A=1 > f",
        "export A=1 &",
        "export A=1 | ls",
        "ls | export A=1",
        "A=1 export B=2",
        "export  A=1",
        "export\tA=1",
        "export A=1  && ls",
        "export A=\\x",
        "export A=1\\\nrm",
        "export A=1\r",
        "export A=é",
        "export A=1 <<< x",
        "timeout 5 export A=1",
        "echo export A=1",
        "declare A=1",
        "declare -x A=1",
        "typeset A=1",
        "local A=1",
        "readonly A=1",
        "readonly -f f",
        "unset A",
    ],
)
def test_other_declarations_refused(command: str) -> None:
    """Flags, bare names, expansions, quotes, redirections, other declaration builtins: the parser decides."""
    assert plan_simple(command) is None, command


def test_lone_dash_before_redirection_fails_closed() -> None:
    """tree-sitter-bash drops the `-` in `cat - 2>/dev/null`: the planner refuses rather than guess."""
    result = analyze("cat - 2>/dev/null")
    assert not result.read_only
    assert (
        "unsupported shell construct: source text the parser skipped before a redirection" in result.reasons
    )


@pytest.mark.parametrize("command", ["uniq == out", "uniq in =~ out"])
def test_equality_words_are_arguments(command: str) -> None:
    """The grammar keeps `==`/`=~` as anonymous tokens; bash passes them as words (here: an output file)."""
    result = analyze(command)
    assert not result.read_only, result.reasons
    assert result.subcommands[0].argv[1] in ("==", "in")


_NAMES = [
    "export A=1",
    "export A=1 B=2",
    "export",
    "export -f",
    "export -n A=1",
    "export A",
    "export A+=1",
    "readonly A=1",
    "declare A=1",
    "local A=1",
    "typeset -x A=1",
    "ls",
    "git",
    "cat",
    "grep",
    "echo",
    "printf",
    "sed",
    "find",
    "timeout",
    "bash",
    "sh",
    "xargs",
    "cd",
    "pushd",
    "test",
    "env",
    "sort",
    "uniq",
    "head",
    "wc",
    "rm",
    "tee",
    "xxd",
    "man",
    "tree",
    "time",
    "if",
    "done",
    "export",
    "declare",
    "let",
    "eval",
    "exec",
    "nice",
    "sudo",
    "command",
    ".",
    "source",
    "true",
    "1",
    "a.b",
    "./x",
    "/bin/ls",
    "-x",
    "x=1",
    "'ls'",
    "*",
    "%1",
    "!",
    "{",
    "[",
    "[[",
    "function",
    "select",
]
_WORDS = [
    "-la",
    "-n",
    "20",
    "5",
    "-",
    "--",
    "x",
    "a.b",
    "a,b",
    "a..b",
    "HEAD~1",
    "~",
    "~/x",
    "a=~/x",
    "a=b",
    "--x=y",
    "'foo'",
    "'a b'",
    '"a b"',
    '"foo"',
    "''",
    '""',
    "a'b'c",
    "'a'\"b\"c",
    "--include='*.py'",
    "*.py",
    "src/*.py",
    "?",
    "a*b",
    "-*",
    "'*'x",
    "x'*'",
    "a?",
    "[ab]",
    "{}",
    "-I{}",
    "{a,b}",
    "$x",
    "$PATH",
    "$IFS",
    "$_",
    "$x_1",
    "$1",
    "$@",
    "$$",
    "${x}",
    "${x@P}",
    "${!x}",
    "$'a'",
    "$x$y",
    "$x/y",
    "a$x",
    "$x'a'",
    "$é",
    "$x\r",
    "$x=y",
    "$x{}",
    '"$x"',
    "'$x'",
    "`id`",
    "\\x",
    "a\\",
    "#x",
    "a#b",
    "%",
    "@",
    "+x",
    "==",
    "=~",
    "=",
    "done",
    "in",
    "fi",
    "then",
    "'a\"b'",
    '"a\'b"',
    "'`'",
    "é",
    "'é'",
    "-c",
    "'sleep 1; ls'",
    "'rm x'",
    "core.pager=sh",
    "-exec",
    ";",
    "'{print $1}'",
    '"a!b"',
    '"a#b"',
    "a\tb",
    "10",
    "0x1F",
    "-5",
    "+3",
    "1.5",
    "\\;",
    "x\\;",
    "{}x",
    "A=1",
]
_REDIRECTS = [
    "2>&1",
    "2>/dev/null",
    "> out",
    ">> out",
    "< in",
    "<in",
    ">out",
    "2> err",
    "1>&2",
    ">&2",
    "0<f",
    "2>&-",
    "&>/dev/null",
    "<> f",
    ">| f",
    "> $f",
    "> 'o u t'",
    "> *.txt",
    "3>f",
    "12>f",
    "<<< x",
    "> done",
    ">&2x",
    ">& 2",
    "2>>err",
]
_OPS = [" | ", " && ", " || ", "; ", ";", " ;", "|", "&&", "||", " & ", "&", " |& ", "\n", " ;; ", " "]
#: Env prefixes put before some generated commands (plain ones the fast path takes, and others it refuses).
_PREFIXES = [
    "",
    "",
    "",
    "A=1 ",
    "PYTHONPATH=src:lib ",
    "X=a/b.c ",
    "x= ",
    "x=~/a ",
    "X='a b' ",
    "1x=2 ",
    "A=1 B=2 ",
]


@st.composite
def _commands(draw: st.DrawFn) -> str:
    parts = []
    for _ in range(draw(st.integers(1, MAX_COMMANDS + 1))):
        words = [draw(st.sampled_from(_PREFIXES)) + draw(st.sampled_from(_NAMES))]
        words += draw(st.lists(st.sampled_from(_WORDS), max_size=4))
        words += draw(st.lists(st.sampled_from(_REDIRECTS), max_size=2))
        if draw(st.booleans()) and len(words) > 1:
            index = draw(st.integers(1, len(words) - 1))
            words.insert(index, draw(st.sampled_from(_REDIRECTS)))
        parts.append(draw(st.sampled_from([" ", "  ", "\t"])).join(words))
    command = parts[0]
    for part in parts[1:]:
        command += draw(st.sampled_from(_OPS)) + part
    return (
        draw(st.sampled_from(["", " ", "\t"]))
        + command
        + draw(st.sampled_from(["", " ", ";", " ;", "\n", " &", "&", " & ;"]))
    )


@settings(max_examples=examples(1500), deadline=None)
@given(_commands())
def test_generated_commands_agree(command: str) -> None:
    _same(command)


@settings(max_examples=examples(500), deadline=None)
@given(st.text(alphabet="ab -'\"$`\\|&;<>(){}[]*?~=#!.,/:@%+^\n\t0129é", max_size=40))
def test_arbitrary_text_agrees(command: str) -> None:
    _same(command)


#: Characters the token grammar treats differently (blanks, operators, digits before `>`/`<`, quotes,
#: characters refused inside "..." or everywhere, `~`, non-ASCII), plus plain ones.
_TOKEN_ALPHABET = " \t|&;<>0123456789ab'\"~*?-=$\\`!#\n{}()[]^é/.:@%+,\x01\x7f"


@pytest.mark.parametrize("command", TABLE)
def test_scanner_matches_token_grammar_on_tables(command: str) -> None:
    """The hand-written scanners yield exactly the tokens of their regex specifications."""
    assert scan_tokens(command) == TOKEN_SPEC.findall(command), command
    assert scan_plain_tokens(command) == PLAIN_TOKEN_SPEC.findall(command), command


@settings(max_examples=examples(3000), deadline=None)
@given(st.text(alphabet=_TOKEN_ALPHABET, max_size=24))
def test_scanner_matches_token_grammar(command: str) -> None:
    assert scan_tokens(command) == TOKEN_SPEC.findall(command), command
    assert scan_plain_tokens(command) == PLAIN_TOKEN_SPEC.findall(command), command


_SEGMENT = re.compile(r"'([^']*)'|\"([^\"]*)\"|([^'\"]+)")


def _segments_word(text: str) -> tuple[str, str, frozenset[str]] | None:
    """The quoted-word rule as first written (segments found by a regex): the reference for ``_quoted_word``."""
    segments: list[tuple[str, str, str]] = _SEGMENT.findall(text)
    if any("*" in plain or "?" in plain for _single, _double, plain in segments):
        return None
    if len(segments) == 1:
        single, double, _plain = segments[0]
        return (text, double, DQ_WHOLE_FEATURES) if text[0] == '"' else (text, single, QUOTED_FEATURES)
    return text, "".join([a or b or c for a, b, c in segments]), QUOTED_FEATURES


@settings(max_examples=examples(3000), deadline=None)
@given(st.text(alphabet="ab*?'\"~- $x", min_size=1, max_size=12))
def test_quoted_words_match_their_segments(text: str) -> None:
    """Every quoted word the tokenizer yields gets the value its segments give."""
    for token in scan_tokens(text):
        if ("'" in token or '"' in token) and re.fullmatch(_WORD, token):
            word = _quoted_word(token)
            got = None if word is None else (word.raw, word.value, word.features)
            assert got == _segments_word(token), token


@settings(max_examples=examples(2000), deadline=None)
@given(st.text(alphabet="aZ09_./+-=:@%,~*?'\"$ é\t", min_size=1, max_size=8))
def test_command_names_match_their_pattern(token: str) -> None:
    """The fast path's command-name check is a code-point scan of this pattern."""
    assert _is_name(token) == bool(re.fullmatch(r"[A-Za-z0-9_./][A-Za-z0-9_./+-]*", token)), token


@pytest.mark.parametrize(
    "command",
    [
        "ls 2>&1",
        "ls 2>&1x",
        "ls >&2;",
        "ls 2>&",
        "ls 2>>f",
        "ls 2> 'a b'",
        "ls >>",
        "ls 3<f",
        "ls x>f",
        "echo 'a'b\"c\"~d",
        "echo 'a",
        'echo "$x"',
        "a&&b||c|d;e&f",
        "find . -exec rm {} \\;",
        "find . -exec rm {} \\; -print",
        "ls {}",
        "ls {}\t",
        "ls\t\\;",
        "ls \\;x",
        "ls {}}",
        "ls x{} \\",
        "  ls  \t",
        'ls >\t"x"y',
    ],
)
def test_scanner_edge_cases(command: str) -> None:
    assert scan_tokens(command) == TOKEN_SPEC.findall(command), command
    assert scan_plain_tokens(command) == PLAIN_TOKEN_SPEC.findall(command), command


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    taken = [command for command in TABLE if plan_simple(command) is not None]
    FAST_TAKES.write_text(json.dumps(taken, indent=0, ensure_ascii=True) + "\n", encoding="utf-8")


_HEADS = ["timeout 5 ls", "cd x", "nice make", "env A=1 ls", "xargs rm", "git status"]


@pytest.mark.parametrize("op", ["&&", "||", ";"])
def test_a_redirected_pipeline_start_after_a_list_agrees(op: str) -> None:
    """``cd src && make 2>&1 | tail``: tree-sitter-bash nests the list before a redirected pipeline
    start into the pipeline (wrapped commands too: the pipeline is their outermost context)."""
    for a, b, c in itertools.product(_HEADS, repeat=3):
        for command in (f"{a} {op} {b} 2>&1 | {c}", f"{a} {op} {b} > f | {c} && {a}"):
            assert _same(command), command


@pytest.mark.parametrize(
    ("command", "value"),
    [('echo " "', " "), ('rm "  "', "  "), ('echo "\t"', "\t"), ('echo " "" "x', "  x"), ('echo ""', "")],
)
def test_blank_only_double_quoted_words_keep_their_blanks(command: str, value: str) -> None:
    """tree-sitter-bash puts the blanks of ``" "`` into the closing quote's token: the parser path
    read such a word as empty (bash: a blank), while the fast path kept the blank."""
    assert _analyze_bash(command, fast=False).plan.commands[0].argv[-1].value == value  # type: ignore[union-attr]
    if plan_simple(command) is not None:
        assert _same(command)
