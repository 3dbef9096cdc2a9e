"""Red team, round 14 (command analysis): a file named by an option value inside a short-option bundle.

``git config -lf FILE`` is ``-l -f FILE`` to git's option parser, and so is ``-lfFILE``: git prints
every ``key=value`` of FILE (an INI credentials file such as ``~/.aws/credentials`` is valid git
config). The analysis took git's file options (``config -f``, ``grep -f``, ``ls-files -X``) only as
separate words or ``--long=`` forms, so ``git config -lf/home/u/.aws/credentials`` had no read
path; the Bash tool's own reading of the words took ``-lfPATH`` for the option ``-l`` with the value
``fPATH`` (a relative name inside the workspace). The part was read-only, inside the workspace, and
ran without asking in default mode, printing a file outside the workspace (and one under a
``Read(...)`` deny rule).

Now git's file options are read from the same option parse that judges the subcommand (bundles,
attached and separate values), and the Bash tool takes every tail of a short-option bundle as a
possible path (``-lf/x`` names ``f/x`` and ``/x``).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from shellrt.analysis import analyze
from shellrt.protocol import ResultEnvelope
from shellrt.tools._bashparts import _word_reads
from tests._governance import envelope_text as _text
from tests._governance import isolated_workspace, run_bash

pytestmark = pytest.mark.anyio

_SECRET = "HUNTER2-r14"
_INI = f"[default]\nsecretkey = {_SECRET}\n"


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolated_workspace(tmp_path, monkeypatch)


async def _bash(ws: Path, commands: list[str], *, mode: str, **kw: Any) -> list[ResultEnvelope]:
    return await run_bash(ws, commands, mode=mode, id_prefix="r14o", **kw)


def test_git_prints_a_file_named_in_a_bundle(tmp_path: Path) -> None:
    git = shutil.which("git")
    assert git is not None
    (tmp_path / "creds").write_text(_INI)
    for argv in (["config", "-lf", "creds"], ["config", "-lfcreds"], ["config", "-zlfcreds"]):
        out = subprocess.run([git, *argv], cwd=tmp_path, capture_output=True, text=True, timeout=30)
        assert _SECRET in out.stdout, (argv, out)


@pytest.mark.parametrize(
    ("command", "path"),
    [
        ("git config -lf/x/creds", "/x/creds"),
        ("git config -zlf/x/creds", "/x/creds"),
        ("git config -lf creds", "creds"),
        ("git config -f/x/creds -l", "/x/creds"),
        ("git config -f/x/creds --get a.b", "/x/creds"),
        ("git config --get -f/x/creds a.b", "/x/creds"),
        ("git --no-pager config -lf/x/creds", "/x/creds"),
        ("git grep -if/x/pats needle", "/x/pats"),
        ("git grep -f/x/pats", "/x/pats"),
        ("git grep -f /x/pats", "/x/pats"),
        ("git grep -nf /x/pats", "/x/pats"),
        ("git ls-files -oX/x/ex", "/x/ex"),
        ("git ls-files -X /x/ex", "/x/ex"),
        ("git ls-files --exclude-per-directory=.secret", ".secret"),
    ],
)
def test_the_file_is_a_read_path(command: str, path: str) -> None:
    analysis = analyze(command)
    assert path in analysis.read_paths, (command, analysis.read_paths)


@pytest.mark.parametrize(
    ("word", "path"),
    [("-lf/x/creds", "/x/creds"), ("-zlf.env", ".env"), ("-if/etc/shadow", "/etc/shadow"), ("-f/x", "/x"),
     ("-lf/x/a=b", "/x/a=b")],
)
def test_every_tail_of_a_bundle_is_a_possible_path(word: str, path: str) -> None:
    assert path in _word_reads(["prog", word])


def test_long_options_and_plain_words_are_unchanged() -> None:
    assert _word_reads(["prog", "--file=/x", "a"]) == ["/x", "a"]
    assert _word_reads(["prog", "-la"]) == ["a"]
    assert _word_reads(["prog", "-abc"]) == ["bc", "c"]


async def test_the_bash_tool_asks_for_a_file_outside_the_workspace(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "home" / ".aws"
    outside.mkdir(parents=True)
    (outside / "credentials").write_text(_INI)
    (ws / "creds").write_text(_INI)
    envelopes = await _bash(
        ws,
        [f"git config -lf{outside}/credentials", f"git config -zlf{outside}/credentials", "git config -lfcreds"],
        mode="default",
        deny=["Read(./creds)"],
    )
    for envelope in envelopes:
        assert envelope.is_error and _SECRET not in _text(envelope), _text(envelope)


def test_a_long_run_of_option_letters_is_an_unknown_read() -> None:
    word = "-" + "lz" * 40 + "f/x/creds"
    reads = _word_reads(["git", "config", word])
    assert "" in reads
    assert analyze(f"git config {word}").read_paths[-1:] == ["/x/creds"]


@pytest.mark.parametrize(
    ("argv", "writes"),
    [
        (["curl", "-sSo", "keep.txt", "u"], ["keep.txt"]),
        (["curl", "-sSokeep.txt", "u"], ["keep.txt"]),
        (["curl", "-sLO", "u"], [""]),
        (["curl", "-XPOST", "u"], []),  # -X takes the rest: no -O in it
        (["wget", "-qO", "keep.txt", "u"], ["keep.txt"]),
        (["wget", "-qOkeep.txt", "u"], ["keep.txt"]),
    ],
)
def test_download_output_options_in_bundles(argv: list[str], writes: list[str]) -> None:
    from shellrt.tools._bashparts import _download_writes

    assert _download_writes(argv[0], argv) == writes


async def test_curl_bundle_cannot_overwrite_a_denied_file(ws: Path) -> None:
    assert shutil.which("curl") is not None
    (ws / "keep.txt").write_text("keep")
    (ws / "src").write_text("overwritten")
    envelopes = await _bash(
        ws, [f"curl -sSo keep.txt file://{ws}/src", f"curl -sSokeep.txt file://{ws}/src"],
        mode="default", allow=["Bash(curl:*)"], deny=["Edit(./keep.txt)"],
    )
    assert (ws / "keep.txt").read_text() == "keep", [_text(e) for e in envelopes]
    assert all(e.is_error for e in envelopes)
