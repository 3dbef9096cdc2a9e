"""Red team, round 14 (classifier): abbreviated recursion options walked past ``Read(...)`` deny rules.

GNU grep takes any unambiguous abbreviation of a long option (``--recur``, ``--derefer``,
``--dir=recurse``) and of ``--directories``'s value (``-d rec`` is ``-d recurse``). The analysis
knew ``-d recurse`` only spelled out, so ``grep -d rec hunter .`` was read-only and not recursive:
in default mode, with no allow rule, it printed ``./secrets/key`` under ``Read(./secrets/**)``.
Under ``Bash(grep:*)`` the abbreviated long options (not read-only: unknown to the model) were not
recursive either, and ``--dereference-rec`` followed a link out of the workspace (the Bash tool
tested ``--dereference`` and ``--follow`` as exact prefixes). ``ls --recur`` listed a denied
directory under ``Bash(ls:*)``. Every prefix of a recursion or link-following option (and of
``recurse`` as grep's value) now makes the part walk, in the analysis and in the Bash tool.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from shellrt.analysis import analyze
from shellrt.protocol import ResultEnvelope
from shellrt.tools._bashparts import _follows_links, _recursive
from tests._governance import envelope_text as _text
from tests._governance import isolated_workspace, run_bash

pytestmark = pytest.mark.anyio

_WALKS = [
    "grep -d rec hunter .", "grep -drec hunter .", "grep -d recurse hunter .", "grep --directories=recu hunter .",
    "grep --dir=recurse hunter .", "grep --direc rec hunter .", "grep --recur hunter .", "grep --recursiv hunter .",
    "grep --dereference-rec hunter .", "grep --derefer hunter .", "ls --recur .", "diff --recur a b",
]


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolated_workspace(tmp_path, monkeypatch)


async def _bash(ws: Path, commands: list[str], *, mode: str, **kw: Any) -> list[ResultEnvelope]:
    return await run_bash(ws, commands, mode=mode, id_prefix="r14a", **kw)


def test_grep_walks_with_abbreviations(tmp_path: Path) -> None:
    grep = shutil.which("grep")
    assert grep is not None
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "key").write_text("hunter2\n")
    for argv in (["-d", "rec"], ["--recur"], ["--derefer"], ["--dir=recurse"]):
        out = subprocess.run([grep, *argv, "hunter", "."], cwd=tmp_path, capture_output=True, text=True, timeout=30)
        assert "hunter2" in out.stdout, (argv, out)


@pytest.mark.parametrize("command", _WALKS)
def test_the_analysis_says_the_part_walks(command: str) -> None:
    [part] = analyze(command).subcommands
    assert part.recursive, command


@pytest.mark.parametrize("command", _WALKS)
def test_the_bash_tool_says_the_part_walks(command: str) -> None:
    argv = command.split()
    assert _recursive(argv[0], argv), command


@pytest.mark.parametrize(
    "command", ["grep -d read x .", "grep -d skip x f", "grep --regexp=x f", "ls --reverse .", "grep -e rec f"]
)
def test_other_values_and_options_do_not_walk(command: str) -> None:
    [part] = analyze(command).subcommands
    argv = command.split()
    assert not part.recursive and not _recursive(argv[0], argv), command


@pytest.mark.parametrize("word", ["--derefer", "--dereference-rec", "--deref"])
def test_abbreviated_link_following(word: str) -> None:
    assert _follows_links("grep", ["grep", word, "x", "."])
    assert _follows_links("ls", ["ls", "-R", word, "."])


async def test_denied_and_outside_files_are_not_printed(ws: Path, tmp_path: Path) -> None:
    (ws / "secrets").mkdir()
    (ws / "secrets" / "key").write_text("hunter2\n")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "s").write_text("hunter3\n")
    (ws / "d").mkdir()
    (ws / "d" / "out").symlink_to(outside)
    commands = ["grep -d rec hunter .", "grep --recur hunter .", "grep --derefer hunter .", "ls --recur ."]
    envelopes = await _bash(
        ws, commands, mode="default", allow=["Bash(grep:*)", "Bash(ls:*)"],
        deny=["Read(./secrets/**)", f"Read({outside}/**)"],
    )
    for command, envelope in zip(commands, envelopes, strict=True):
        text = _text(envelope)
        leaked = "hunter2" in text or "hunter3" in text or "\nkey" in text
        assert envelope.is_error and not leaked, (command, text)


@pytest.mark.parametrize("command", ["git cat-file --batch-com", "git cat-file --batch=%(objectname)", "git log --stdi"])
def test_abbreviated_git_stdin_options_read_unknown_objects(tmp_path: Path, command: str) -> None:
    # `echo 'contents HEAD:secrets/key' | git cat-file --batch-com` prints a committed denied file.
    from shellrt.tools._bashparts import command_parts

    parts = command_parts(analyze(command), str(tmp_path), lambda _path: True, check_git=False)
    assert "" in parts[0].reads, parts


@pytest.mark.parametrize(
    "argv",
    [["mv", "--targ=sub", "k"], ["mv", "--targ", "sub", "k"], ["mv", "-ftsub", "k"], ["mv", "-bS", ".x", "k", "d"],
     ["cp", "--lin", "k", "d"]],
)
def test_abbreviated_and_bundled_targets_keep_the_source(argv: list[str]) -> None:
    from shellrt.tools._bashparts import _aliased_sources

    assert _aliased_sources(argv[0], argv) == ["k"]


def test_abbreviated_symbolic_links() -> None:
    from shellrt.tools._bashparts import _makes_symlink

    assert _makes_symlink("ln", ["ln", "--sym", "/etc", "up"])
    assert _makes_symlink("cp", ["cp", "--symbolic-l", "a", "b"])
    assert not _makes_symlink("ln", ["ln", "a", "b"])


async def test_mv_with_an_abbreviated_target_cannot_move_a_denied_file(ws: Path) -> None:
    (ws / "sub").mkdir()
    (ws / "keep.txt").write_text("keep")
    [envelope] = await _bash(ws, ["mv --targ=sub keep.txt"], mode="default", allow=["Bash(mv:*)"],
                             deny=["Edit(./keep.txt)"])
    assert envelope.is_error and (ws / "keep.txt").exists(), _text(envelope)
