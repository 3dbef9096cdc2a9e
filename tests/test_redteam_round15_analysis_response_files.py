"""Red team, round 15 (classifier): ``strings @FILE`` read the files FILE names, unseen.

binutils programs expand response files before they parse options (libiberty's ``expandargv``):
every argument ``@FILE`` is replaced by the words FILE holds, even after ``--``. ``strings`` is a
read-only program of the analysis, and ``strings @list`` was read-only with the read path ``@list``
only: where ``list`` names ``secrets/key`` (or ``/etc/...``), the Bash tool ran it unasked in
default mode and printed a file a ``Read(./secrets/**)`` deny rule covers. A response file is now a
read path, and what it names is unknown (""): the Bash tool then asks while a ``Read(...)`` rule
exists, and refuses to call the part read-only. A glob that may expand to a name starting with
``@`` (``strings ?list`` beside a file named ``@list``) makes the reads unknown too.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from shellrt.analysis import analyze
from tests._governance import envelope_text, isolated_workspace, run_bash

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("command", "listed"),
    [("strings @rsp", "rsp"), ("strings -- @rsp", "rsp"), ("strings -a -n 4 @rsp x", "rsp"),
     ("strings x @dir/rsp", "dir/rsp")],
)
def test_a_response_file_is_read_and_what_it_names_is_unknown(command: str, listed: str) -> None:
    analysis = analyze(command)
    assert listed in analysis.read_paths and "" in analysis.read_paths, (command, analysis.read_paths)
    [part] = analysis.subcommands
    assert listed in part.reads and "" in part.reads, part


@pytest.mark.parametrize("command", ["strings ?rsp", "strings x *"])
def test_a_glob_that_may_name_a_response_file_is_an_unknown_read(command: str) -> None:
    [part] = analyze(command).subcommands
    assert "" in part.reads, part


@pytest.mark.parametrize("command", ["strings f", "strings -n 8 f", "strings ./*", "strings x*"])
def test_plain_operands_are_known(command: str) -> None:
    analysis = analyze(command)
    assert "" not in analysis.read_paths, (command, analysis.read_paths)


def test_strings_reads_the_named_files(tmp_path: Path) -> None:
    strings = shutil.which("strings")
    if strings is None:
        pytest.skip("binutils' strings is not installed")
    (tmp_path / "key").write_text("hunter2secret\n")
    (tmp_path / "rsp").write_text("key\n")
    for argv in (["@rsp"], ["--", "@rsp"]):
        out = subprocess.run([strings, *argv], cwd=tmp_path, capture_output=True, text=True, timeout=30)
        assert "hunter2secret" in out.stdout, (argv, out)


async def test_the_bash_tool_does_not_print_a_denied_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if shutil.which("strings") is None:
        pytest.skip("binutils' strings is not installed")
    ws = isolated_workspace(tmp_path, monkeypatch)
    (ws / "secrets").mkdir()
    (ws / "secrets" / "key").write_text("hunter2secret\n")
    (ws / "rsp").write_text("secrets/key\n")
    (ws / "@rsp").write_text("secrets/key\n")
    commands = ["strings @rsp", "strings -- @rsp", "strings ?rsp"]
    # Default mode, no allow rule: a read-only part runs unasked; `Bash(strings:*)` allows the rest.
    for allow in ([], ["Bash(strings:*)"]):
        envelopes = await run_bash(ws, commands, mode="default", id_prefix="r15rf", allow=allow,
                                   deny=["Read(./secrets/**)"])
        for command, envelope in zip(commands, envelopes, strict=True):
            text = envelope_text(envelope)
            assert envelope.is_error and "hunter2secret" not in text, (allow, command, text)
