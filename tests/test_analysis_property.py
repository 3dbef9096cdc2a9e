"""Property test: composing a known-unsafe fragment with anything never yields read-only."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from shellrt.analysis import analyze
from tests._fuzz import examples

UNSAFE = [
    "rm -rf x", "rm x", "touch f", "mv a b", "cp a b", "chmod 777 f", "git push", "git commit -m x",
    "git -c core.pager=sh log", "git diff --output=x", "git branch new", "sed -i s/a/b/ f",
    "sed -n 's/a/b/w out' f", "sort -o out in", "uniq a b", "find . -delete", "find . -exec id ;",
    "rg --pre=sh x", "python -c 1", "sh -c 'rm x'", "bash", "curl http://x", "ls > out", "echo x >> f",
    "cat < /dev/tcp/1.2.3.4/80", "tee f", "x=1", "PATH=/tmp ls", "LD_PRELOAD=x ls", "export A=1",
    "eval ls", "exec ls", "source f", ". f", "$x", "$'ls'", "\\ls", "ls $(id)", "echo `id`", "cat <(id)",
    "echo {a,b}", "ls -*", "let x=1", "(( x=1 ))", "f() { ls; }", "for a in b; do ls; done",
    "xxd -r a b", "date -s now", "man -P sh ls", "tree -o f", "printf -v x y", "git stash",
    "[[ $x -eq 1 ]]", "read x", "kill 1", "echo ${x@P}", "ls &", "timeout 1 rm x", "sudo ls", "xargs ls",
]
SAFE = ["ls", "git status", "cat f", "echo hi", "pwd", "grep -n x f", "true", "wc -l f", "head -5 f",
        "[[ -f x ]]", "sort f", "git log --oneline"]
BINARY = [" && ", " || ", "; ", " | ", "\n", " |& "]


def _wrap(fragment: str, how: int) -> str:
    return [
        fragment,
        f"({fragment})",
        f"{{ {fragment}; }}",
        f'echo "$({fragment})"',
        f"cat <({fragment})",
        f"if true; then {fragment}; fi",
        f"if {fragment}; then ls; fi",
        f"while false; do {fragment}; done",
        f"case x in x) {fragment};; esac",
        f"! {fragment}",
        f"[[ -n $({fragment}) ]]",
        f"ls `{fragment}`",
        f"bash -c '{fragment}'",
        f"timeout 5 {fragment}",
        f"cat <<EOF\n$({fragment})\nEOF",
    ][how]


@st.composite
def compounds(draw: st.DrawFn) -> str:
    unsafe = _wrap(draw(st.sampled_from(UNSAFE)), draw(st.integers(0, 14)))
    parts = [unsafe] + draw(st.lists(st.sampled_from(SAFE), max_size=3))
    order = draw(st.permutations(parts))
    command = order[0]
    for part in order[1:]:
        command += draw(st.sampled_from(BINARY)) + part
    if draw(st.booleans()):
        command = _wrap(command, draw(st.sampled_from([1, 2, 5])))
    return command


@settings(max_examples=examples(250), deadline=None)
@given(compounds())
def test_unsafe_fragment_never_read_only(command: str) -> None:
    result = analyze(command)
    assert not result.read_only, (command, result.reasons)
    assert not result.concurrency_safe


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.sampled_from(SAFE), min_size=1, max_size=4), st.lists(st.sampled_from(BINARY), min_size=3,
                                                                          max_size=3))
def test_safe_compounds_stay_read_only(parts: list[str], ops: list[str]) -> None:
    command = parts[0]
    for op, part in zip(ops, parts[1:], strict=False):
        command += op + part
    assert analyze(command).read_only, command


@settings(max_examples=examples(150), deadline=None)
@given(st.text(max_size=80))
def test_arbitrary_text_never_crashes(text: str) -> None:
    result = analyze(text)
    assert isinstance(result.read_only, bool)
    analyze(text, "powershell")
