"""Compound splitting, plan contents, reasons, env, writes and destructive hints."""

from __future__ import annotations

import pytest

import shellrt.analysis as analysis_pkg
from shellrt.analysis import CommandAnalysis, CommandPlan, Subcommand, analyze


def subs(command: str) -> list[str]:
    return [s.text for s in analyze(command).subcommands]


def test_public_api_is_pinned() -> None:
    assert analysis_pkg.__all__ == [
        "GIT_CONFIG_OVERRIDES", "MAX_COMMAND_CHARS", "MAX_SUBCOMMANDS", "Assignment", "CommandAnalysis",
        "CommandPlan", "Construct", "Heredoc", "PlanCommand", "Redirect", "Subcommand", "Substitution", "Word",
        "analyze", "git_hardening_env",
    ]


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("git status && rm -rf x", ["git status", "rm -rf x"]),
        ('echo "$(rm x)"', ["rm x", 'echo "$(rm x)"']),
        ("ls | xargs rm", ["ls", "xargs rm", "rm"]),
        ("timeout 5 rm x", ["timeout 5 rm x", "rm x"]),
        ("sudo -u root rm x", ["sudo -u root rm x", "rm x"]),
        ("env FOO=1 rm x", ["env FOO=1 rm x", "rm x"]),
        ("nice -n 5 rm x", ["nice -n 5 rm x", "rm x"]),
        ("bash -c 'rm x; ls'", ["bash -c 'rm x; ls'", "rm x", "ls"]),
        ("eval 'rm x'", ["eval 'rm x'", "rm x"]),
        ("find . -exec rm {} \\;", ["find . -exec rm '{}' ';'", "rm '{}'"]),
        ("cat <(id)", ["id", "cat <(id)"]),
        ("(rm x)", ["rm x"]),
        ("{ rm x; }", ["rm x"]),
        ("f() { rm x; }", ["rm x"]),
        ("if true; then rm x; fi", ["true", "rm x"]),
        ("for f in a; do rm $f; done", ["rm $f", "f=a"]),  # the loop binds f (round 48)
        ("while read l; do rm x; done < list", ["read l", "rm x"]),
        ("case x in x) rm y;; esac", ["rm y"]),
        ("[[ $(rm x) ]]", ["rm x", "[[ $(rm x) ]]"]),
        ("(( $(rm x) ))", ["rm x", "(( $(rm x) ))"]),
        ("x=$(rm y)", ["rm y", "x=$(rm y)"]),
        ("ls > $(rm x)", ["ls", "rm x"]),
        ("cat <<EOF\n$(rm x)\nEOF", ["cat", "rm x"]),
        ("ls\nrm x", ["ls", "rm x"]),
        ("ls & rm x", ["ls", "rm x"]),
        ("! rm x", ["rm x"]),
        ("command rm x", ["command rm x", "rm x"]),
        ("xargs -I{} rm {} < list", ["xargs '-I{}' rm '{}'", "rm '{}'"]),
        ("timeout 5 bash -c 'rm x'", ["timeout 5 bash -c 'rm x'", "bash -c 'rm x'", "rm x"]),
    ],
)
def test_subcommands(command: str, expected: list[str]) -> None:
    assert subs(command) == expected


def test_subcommand_argv() -> None:
    (first, second) = analyze("grep -n 'a b' f && rm x").subcommands
    assert first == Subcommand(text="grep -n 'a b' f", argv=["grep", "-n", "a b", "f"], name="grep",
                               static_name=True, reads=["f"])
    assert second.argv == ["rm", "x"]


def test_unparseable_keeps_raw_text_as_a_subcommand() -> None:
    result = analyze("ls (")
    assert not result.parse_ok and not result.read_only
    assert result.subcommands[-1].text == "ls ("


def test_plan_contents() -> None:
    plan = analyze("cd src && A=1 git log 2>/dev/null | head -3 > out; cat <<EOF\nx\nEOF").plan
    assert isinstance(plan, CommandPlan)
    assert [c.name for c in plan.commands] == ["cd", "git", "head", "cat"]
    assert plan.operators == ["&&", "|", ";"]
    assert plan.cd_targets == ["src"]
    assert [(r.fd, r.op, r.target.value if r.target else None) for r in plan.redirects] == [
        ("2", ">", "/dev/null"), (None, ">", "out"), (None, "<<", None)]
    assert plan.heredocs[0].delimiter == "EOF" and plan.heredocs[0].expands
    assert plan.commands[1].assignments[0].name == "A"
    assert "pipeline" in plan.commands[2].context


def test_plan_dynamic_flag() -> None:
    assert analyze('ls "$x"').plan.dynamic  # type: ignore[union-attr]
    assert not analyze("ls -la").plan.dynamic  # type: ignore[union-attr]


def test_plan_has_no_parser_objects() -> None:
    result = analyze("git status && (ls | wc -l)")
    dumped = result.model_dump()
    assert CommandAnalysis.model_validate(dumped) == result


def test_json_dict() -> None:
    data = analyze("git status && rm -rf x").to_json_dict()
    assert data["subcommands"] == ["git status", "rm -rf x"]
    assert data["read_only"] is False and data["destructive"] is True
    assert set(data) >= {"command", "read_only", "concurrency_safe", "destructive", "subcommands", "reasons",
                         "parse_ok"}


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("rm x", "rm is not a known read-only program"),
        ('git diff "$Z--output=/tmp/p"', "is dynamic"),
        ("sort -o out in", "sort -o: writes the output to a file"),
        ("ls > out", "writes a file"),
        ("git -c a=b status", "git -c: sets configuration"),
        ("ls &", "background"),
        ("LD_PRELOAD=x ls", "environment prefix"),
        ("echo {a,b}", "brace expansion"),
        ("uniq *.txt", "glob"),
        ("ls $(id)", "command substitution"),
        ("timeout 5 rm x", "rm is not a known read-only program"),
        ("nohup ls", "nohup runs another command"),
        ("bash -lc ls", "login shell"),
        ("python -c 1", "python runs code"),
    ],
)
def test_reasons(command: str, reason: str) -> None:
    result = analyze(command)
    assert not result.read_only
    assert any(reason in r for r in result.reasons), result.reasons


def test_read_only_reason() -> None:
    assert analyze("git status").reasons == ["read-only: git with known read-only options and no writes"]


def test_git_env_only_with_git() -> None:
    env = analyze("git status").env
    assert env["GIT_PAGER"] == "cat" and env["GIT_TERMINAL_PROMPT"] == "0"
    keys = {env[f"GIT_CONFIG_KEY_{i}"]: env[f"GIT_CONFIG_VALUE_{i}"] for i in range(int(env["GIT_CONFIG_COUNT"]))}
    assert keys["core.fsmonitor"] == "false"
    assert keys["core.pager"] == "cat"
    assert "diff.external" not in keys  # git 2.39: an empty value breaks `git diff` (issue 17)
    assert keys["core.hooksPath"] == "/dev/null"
    assert analyze("ls").env == {}
    assert analyze("git push").env == {"GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat", "PAGER": "cat"}


@pytest.mark.parametrize(
    ("command", "targets", "unknown"),
    [
        ("ls > out.txt", ["out.txt"], False),
        ("echo x >> log 2>/dev/null", ["log"], False),
        ("touch a b", ["a", "b"], False),
        ("mkdir -p d/e", ["d/e"], False),
        # a copy into a directory writes each source's name there (round 39 review13: `b` may be one)
        ("cp a b dest/", ["dest/", "dest/a", "dest/b"], False),
        ("mv a b", ["b", "b/a"], False),
        ("rm -rf x y", ["x", "y"], False),
        ("echo hi | tee -a f", ["f"], False),
        ('ls > "$f"', [], True),
        ("make", [], True),
        ("ls", [], False),
        ("git status", [], False),
    ],
)
def test_write_targets(command: str, targets: list[str], unknown: bool) -> None:
    result = analyze(command)
    assert result.write_targets == targets
    assert result.writes_unknown is unknown


@pytest.mark.parametrize(
    "command",
    ["rm -rf x", "rm -f x", "git reset --hard", "git clean -fd", "git push --force", "git push -f origin main",
     "dd if=/dev/zero of=x", "mkfs.ext4 /dev/sda", "truncate -s0 f", "shred f", "echo > important.txt",
     "chmod -R 777 .", "find . -delete", "git branch -D x"],
)
def test_destructive(command: str) -> None:
    assert analyze(command).destructive


@pytest.mark.parametrize("command", ["ls", "rm x", "git status", "echo hi >> log", "git push", "ls > /dev/null"])
def test_not_destructive(command: str) -> None:
    assert not analyze(command).destructive


def test_limits() -> None:
    assert not analyze("ls " + "x" * 10_001).read_only
    many = " && ".join(["true"] * 51)
    result = analyze(many)
    assert not result.read_only and any("more than 50" in r for r in result.reasons)
    assert analyze(" && ".join(["true"] * 50)).read_only
    deep = "(" * 300 + "ls" + ")" * 300
    assert not analyze(deep).read_only


def test_sleep_parallel_is_concurrency_safe() -> None:
    result = analyze("sleep 1")
    assert result.read_only and result.concurrency_safe


def test_never_raises_on_garbage() -> None:
    for command in ["", " ", "\\", "$(", "`", "'", '"', "<<EOF", "${", "((", "[[", "\x00", "\udcff", "🙂"]:
        analyze(command)
