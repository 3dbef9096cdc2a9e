"""The parts permission rules see: normalised names, env names, background, writes, reads, recursion."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shellrt.analysis import Subcommand, analyze
from shellrt.analysis.parts import _quote
from tests._fuzz import examples


def parts(command: str) -> list[Subcommand]:
    return analyze(command).subcommands


def part(command: str) -> Subcommand:
    return parts(command)[0]


@pytest.mark.parametrize(
    ("command", "name"),
    [
        ("rm F", "rm"),
        ("/bin/rm F", "rm"),
        ("\\rm F", "rm"),
        ("'rm' F", "rm"),
        ('"rm" F', "rm"),
        ("timeout 5 rm F", "rm"),
        ("timeout -s KILL 5 /bin/rm F", "rm"),
        ("env X=1 rm F", "rm"),
        ("env -i -u PATH rm F", "rm"),
        ("command rm F", "rm"),
        ("nice -n 5 rm F", "rm"),
        ("stdbuf -oL rm F", "rm"),
        ("time rm F", "rm"),
        ("nohup rm F", "rm"),
        ("timeout 5 env nice command rm F", "rm"),
        ("/usr/local/bin/rm F", "rm"),
        ("./ls", "./ls"),
        ("bin/ls", "bin/ls"),
        ("/tmp/rm F", "/tmp/rm"),
        ("/usr/bin/env rm F", "rm"),
        ("command -v rm", "command"),
        ("env", "env"),
        ("git diff", "git"),
        ("bash -c 'rm F'", "bash"),
    ],
)
def test_static_names(command: str, name: str) -> None:
    first = part(command)
    assert first.name == name and first.static_name


@pytest.mark.parametrize(
    "command",
    [
        "/???/rm F",
        "$'rm' F",
        "rm${IFS}F",
        "$x F",
        '"$x" F',
        "eval rm F",
        "xargs rm",
        "busybox rm F",
        "timeout 5 $x F",
        "env $X rm F",
        "r*m F",
        "`echo rm` F",
        "$(echo rm) F",
    ],
)
def test_names_that_are_not_static(command: str) -> None:
    outer = [p for p in parts(command) if not p.via and p.argv and not p.argv[0].startswith(("echo",))]
    assert outer and outer[0].name == "" and not outer[0].static_name, outer


@pytest.mark.parametrize(
    ("command", "names"),
    [
        ("X=1 git diff", ["X"]),
        ("GIT_EXTERNAL_DIFF='touch x;true' git diff", ["GIT_EXTERNAL_DIFF"]),
        ("LD_PRELOAD=x ls", ["LD_PRELOAD"]),
        ("env GIT_DIR=x git status", ["GIT_DIR"]),
        ("env -u PATH ls", ["PATH"]),
        ("git status", []),
        ("read GIT_EXTERNAL_DIFF <<< x", ["GIT_EXTERNAL_DIFF"]),
        ("read -r -p x A B", ["A", "B"]),
        ("printf -v LD_PRELOAD %s x", ["LD_PRELOAD"]),
        ("mapfile -t LINES < f", ["LINES"]),
        ("getopts ab OPT", ["OPT"]),
    ],
)
def test_env_names(command: str, names: list[str]) -> None:
    assert part(command).env_names == names


@pytest.mark.parametrize(
    ("command", "text", "name", "names"),
    [
        (
            "export GIT_EXTERNAL_DIFF=x; git diff",
            "export GIT_EXTERNAL_DIFF=x",
            "export",
            ["GIT_EXTERNAL_DIFF"],
        ),
        ("x=1; ls", "x=1", "", ["x"]),
        ("declare -x A=1 B", "declare -x A=1 B", "declare", ["A", "B"]),
        ("readonly R", "readonly R", "readonly", ["R"]),
        ("unset PATH", "unset PATH", "unset", ["PATH"]),
        ("f() { local L=2; }", "local L=2", "local", ["L"]),
        ("export $V=1", "export $V=1", "export", [""]),
    ],
)
def test_assignments_and_declarations_are_parts(command: str, text: str, name: str, names: list[str]) -> None:
    found = [p for p in parts(command) if p.text == text]
    assert found, [p.text for p in parts(command)]
    assert found[0].name == name and found[0].env_names == names


def test_background_parts() -> None:
    assert part("git diff &").background
    first, second, third = parts("a && b & c")
    assert first.background and second.background and not third.background
    assert not part("ls").background


@pytest.mark.parametrize(
    ("command", "writes"),
    [
        ("git diff > ~/.bashrc", ["~/.bashrc"]),
        ("ls >| f", ["f"]),
        ("ls >> f 2>&1", ["f"]),
        ("ls 2>/dev/null", []),
        ("ls &> out", ["out"]),
        ('ls > "$f"', [""]),
        ("ls > *.txt", [""]),
        ("ls <> f", [""]),
    ],
)
def test_writes(command: str, writes: list[str]) -> None:
    assert part(command).writes == writes


def test_writes_belong_to_the_command_they_redirect() -> None:
    first, second = parts("a | b > f")
    assert first.writes == [] and second.writes == ["f"]
    assert [p.writes for p in parts("{ a; b; } > f")] == [["f"], ["f"]]
    assert [p.writes for p in parts("timeout 5 ls > f")] == [["f"], ["f"]]
    assert [(p.text, p.writes) for p in parts("ls > a; ls > b")] == [("ls", ["a"]), ("ls", ["b"])]


@pytest.mark.parametrize(
    ("command", "reads"),
    [
        ("cat < /etc/shadow", ["/etc/shadow"]),
        ("cat secrets/a", ["secrets/a"]),
        ("date --file=/etc/passwd", ["/etc/passwd"]),
        ("date -f /etc/passwd", ["/etc/passwd"]),
        ("diff --from-file=/etc/a b", ["/etc/a", "b"]),
        ("diff --to-file /etc/a b", ["/etc/a", "b"]),
        ("git blame --contents=/etc/passwd f", ["/etc/passwd", "."]),
        ("wc --files0-from=list", ["list", ""]),
        ("file -f/etc/list", ["/etc/list", ""]),
        ("sort --files0-from=l", ["l", ""]),
        ("grep -f /etc/pats x", ["/etc/pats", "x"]),
        ("grep -e pat x y", ["x", "y"]),
        ("grep pat x", ["x"]),
        ("sed -n p /etc/f", ["/etc/f"]),
        ("cat $x", [""]),
        ("jq . a.json", ["a.json"]),
        ("echo /etc/passwd", []),
        ("git diff --no-index /etc/passwd f", ["/etc/passwd", "f"]),
        ("timeout 5 cat /etc/x", ["/etc/x"]),
    ],
)
def test_reads(command: str, reads: list[str]) -> None:
    assert part(command).reads == reads
    assert set(reads) <= set(analyze(command).read_paths)


@pytest.mark.parametrize(
    ("command", "recursive", "reads"),
    [
        ("grep -r TOPSECRET .", True, ["."]),
        ("grep -R x", True, ["."]),
        ("grep --directories=recurse x d", True, ["d"]),
        ("rg foo", True, ["."]),
        ("find src -name x", True, ["src"]),
        ("find", True, ["."]),
        ("ls -R d", True, ["d"]),
        ("du -sh", True, ["."]),
        ("tree", True, ["."]),
        ("fd foo", True, ["."]),
        ("git grep x", True, ["."]),
        ("git show HEAD:secrets/a", True, ["."]),
        ("git log -p", True, ["."]),
        ("git diff", True, ["."]),
        ("git cat-file -p HEAD:secrets/a", True, ["."]),
        ("git log --oneline", False, []),
        ("git status", False, []),
        ("ls d", False, ["d"]),
        ("ls -la", False, ["."]),
        ("grep x f", False, ["f"]),
    ],
)
def test_recursive_reads(command: str, recursive: bool, reads: list[str]) -> None:
    first = part(command)
    assert first.recursive is recursive and first.reads == reads


def test_shell_script_parts_name_their_shell() -> None:
    outer, inner, last = parts("bash -c 'cat a > b; rm c'")
    assert outer.name == "bash" and not outer.via
    assert (inner.text, inner.via, inner.reads, inner.writes) == ("cat a", "bash", ["a"], ["b"])
    assert (last.name, last.via) == ("rm", "bash")


def test_here_document_substitutions_are_parts() -> None:
    texts = [p.text for p in parts("cat <<EOF\n  `rm x`\n\t$(touch y)\nEOF")]
    assert texts == ["cat", "rm x", "touch y"]
    unknown = parts("cat <<EOF\n$(case a in a) rm y;; esac)\nEOF")
    assert any(not p.static_name and p.name == "" for p in unknown), unknown
    assert not analyze("cat <<EOF\n$(case a in a) rm y;; esac)\nEOF").read_only


def test_unparsed_part_is_unknown() -> None:
    last = parts("ls (")[-1]
    assert last.text == "ls (" and last.name == "" and last.writes == [""] and last.reads == [""]


def test_json_dict_has_parts_and_read_paths() -> None:
    data = analyze("X=1 cat < f > g &").to_json_dict()
    assert data["read_paths"] == ["f"]
    assert data["parts"] == [
        {
            "text": "cat",
            "name": "cat",
            "static_name": True,
            "env_names": ["X"],
            "background": True,
            "writes": ["g"],
            "reads": ["f"],
            "recursive": False,
            "via": "",
        }
    ]


@pytest.mark.parametrize(
    "command",
    [
        "[[ -v 'a[$(touch m)]' ]]",
        "[[ 'a[$(touch m)]' -eq 1 ]]",
        "(( 'a[$(touch m)]' ))",
        "[ -v 'a[$(touch m)]' ]",
        "echo $(( 'a[$(touch m)]' ))",
        "ls && [[ ${a['$(touch m)']} ]]",
        "unset 'a[$(touch m)]'",
        "printf -v 'a[$(touch m)]' x",
        "test -v 'a[`touch m`]'",
        "let 'x=a[$(touch m)]'",
    ],
)
def test_quoted_code_bash_evaluates_is_never_a_static_part(command: str) -> None:
    """Arithmetic and subscripts run substitutions hidden in quotes: some part must have no static name."""
    result = analyze(command)
    assert not result.read_only
    assert any(not p.static_name for p in result.subcommands), [(p.text, p.name) for p in result.subcommands]


def test_a_redirection_alone_is_a_part() -> None:
    """`ls; > ~/.bashrc` truncates a file with no command: rules must see the write."""
    last = parts("ls; > ~/.bashrc")[-1]
    assert (last.text, last.name, last.static_name, last.writes) == ("> ~/.bashrc", "", False, ["~/.bashrc"])
    assert part("< /etc/shadow").reads == ["/etc/shadow"]


@pytest.mark.parametrize("command", ["bash -c 'ls; rm x ('", "bash -c 'ls ;; rm x'", "eval 'ls ('"])
def test_a_script_that_does_not_parse_leaves_a_part_no_rule_allows(command: str) -> None:
    result = analyze(command)
    assert not result.read_only
    assert any(not p.static_name and p.via for p in result.subcommands), result.subcommands


@settings(max_examples=examples(2000), deadline=None)
@given(st.text(alphabet="aZ09_@%+=:,./- '\"$\t\n\x00\x7f~*!é日", max_size=12))
def test_part_words_are_quoted_exactly_like_shlex(value: str) -> None:
    """Part texts quote words with a code-point scan; it must agree with ``shlex.quote`` everywhere."""
    assert _quote(value) == shlex.quote(value)


@pytest.mark.parametrize(
    ("command", "text"),
    [("ls 'a b' c", "ls 'a b' c"), ("echo é", "echo 'é'"), ("echo ''", "echo ''"), ("ls -la", "ls -la")],
)
def test_part_text_quotes_only_words_that_need_it(command: str, text: str) -> None:
    assert [part.text for part in analyze(command).subcommands] == [text]
