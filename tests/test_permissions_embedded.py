"""Commands programs run from option values, programs that read anything, and code evaluated from values."""

from __future__ import annotations

import pytest

from shellrt.analysis import analyze
from shellrt.permissions.embedded import command_options, is_dynamic, reads_anything, unknown_code


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["git", "-c", "alias.x=!rm f", "x"], [("-c alias.x", "rm f")]),
        (["git", "-ccore.pager=less -R", "log"], [("-c core.pager", "less -R")]),
        (["git", "-c", "filter.a.smudge=cat", "checkout", "."], [("-c filter.a.smudge", "cat")]),
        (["git", "-c", "include.path=e.cfg", "x"], [("-c include.path", "$include.path=e.cfg")]),
        (["git", "--config-env=alias.x=V", "x"], [("--config-env", "$alias.x=V")]),
        (["git", "rebase", "-x", "make test", "main"], [("-x", "make test")]),
        (["git", "submodule", "foreach", "touch x"], [("submodule foreach", "touch x")]),
        (["git", "bisect", "run", "make", "test"], [("bisect run", "make test")]),
        (["git", "filter-branch", "--tree-filter=touch x", "HEAD"], [("--tree-filter", "touch x")]),
        (["zip", "-q", "-TT=rm f", "z.zip"], [("-TT", "rm f")]),
        (["zip", "-TT", "rm f", "z.zip"], [("-TT", "rm f")]),
        (
            ["tar", "--checkpoint-action=exec=rm f", "-cf", "a.tar", "x"],
            [("--checkpoint-action", "exec=rm f")],
        ),
        (["tar", "-cI", "zstd", "-f", "a.tar", "x"], [("-I", "zstd")]),
        (["tar", "-Izstd", "-cf", "a.tar", "x"], [("-I", "zstd")]),
        (["rsync", "-e", "ssh -p 2", "a", "h:b"], [("-e", "ssh -p 2")]),
        (["sort", "--compress-program=gzip", "f"], [("--compress-program", "gzip")]),
        (["script", "-qc", "rm f", "/dev/null"], [("-c", "rm f")]),
        (["ssh", "-vo", "ProxyCommand=nc h 22", "h"], [("-o", "ProxyCommand=nc h 22")]),
        (["script", "-c", "rm f", "/dev/null"], [("-c", "rm f")]),
        (["flock", "/tmp/l", "-c", "rm f"], [("-c", "rm f")]),
    ],
)
def test_command_options_finds_the_command_in_each_spelling(
    argv: list[str], expected: list[tuple[str, str]]
) -> None:
    assert command_options(argv[0], argv) == expected


@pytest.mark.parametrize(
    "argv",
    [
        ["git", "-c", "color.ui=never", "log"],
        ["git", "push", "-u", "origin", "main"],
        ["git", "cherry-pick", "-x", "abc"],
        ["zip", "-r", "z.zip", "d"],
        ["tar", "-cf", "a.tar", "x"],
        ["sort", "-u", "f"],
    ],
)
def test_ordinary_options_run_no_command(argv: list[str]) -> None:
    assert command_options(argv[0], argv) == []


def test_a_value_with_an_expansion_is_dynamic() -> None:
    assert is_dynamic("$c") and is_dynamic("`c`") and not is_dynamic("rm f")
    assert is_dynamic('"r"m f') and is_dynamic("r\\m f") and is_dynamic("/bin/r? f")


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["python3", "-c", "print(1)"], True),
        (["python3"], True),
        (["python3", "-"], True),
        (["perl", "-ne", "print", "f"], True),
        (["node", "--eval=1"], True),
        (["awk", "{print}", "f"], True),
        (["python3", "build.py"], False),
        (["cat", "f"], False),
        (["make", "test"], False),
    ],
)
def test_inline_interpreters_read_anything(argv: list[str], expected: bool) -> None:
    assert reads_anything(argv[0], argv) is expected


@pytest.mark.parametrize(
    "command",
    [
        'x=$(cat f); echo "${x@P}"',
        "read x; echo ${!x}",
        'printf -v "$n" x',
        "x=$(cat f); echo $((x))",
        "read x < f; (( x ))",
        "x=$(cat f); [[ x -eq 1 ]]",
        "mapfile a < f; echo ${b[a]}",
    ],
)
def test_values_evaluated_as_code_are_found(command: str) -> None:
    # A part with no program name: no allow rule matches it (round 34: the analysis' readers,
    # not a search of the text).
    assert [s for s in analyze(command).subcommands if not s.name and s.argv == [s.text] and not s.env_names]


@pytest.mark.parametrize(
    "command",
    [
        "for ((i=0; i<3; i++)); do echo $i; done",
        "echo $((1 + 2))",
        "ls *.[ch]",
        "x=$(date); echo $x",
        "echo a",
    ],
)
def test_ordinary_commands_evaluate_no_value_as_code(command: str) -> None:
    assert [s.text for s in analyze(command).subcommands if not s.name and s.argv == [s.text] and not s.env_names] == []


@pytest.mark.parametrize(
    ("argv", "unknown"),
    [
        (["sh"], True),
        (["bash", "-s", "x"], True),
        (["bash", "-i"], True),
        ([".", "/dev/stdin"], True),
        (["source", "$f"], True),
        (["trap", "$x", "EXIT"], True),
        (["bash", "-c", "echo hi"], False),
        (["bash", "build.sh"], False),
        (["source", "venv/bin/activate"], False),
        (["trap", "echo bye", "EXIT"], False),
    ],
)
def test_shell_code_from_stdin_or_run_time_values_is_unknown(argv: list[str], unknown: bool) -> None:
    assert bool(unknown_code(argv[0], argv)) is unknown
