"""Red team, round 15 (classifier): abbreviated file-list options read files no rule saw.

``sort --files0-from=LIST`` prints the files LIST names, ``wc``/``du --files0-from`` and ``file
--files-from`` read them, ``md5sum --check LIST`` hashes them: the analysis adds "" (unknown) for
such a list, so the Bash tool asks while a ``Read(...)`` rule exists. But it knew the options only
spelled out, and getopt_long takes any unambiguous prefix: under ``Bash(sort:*)`` and
``Read(./secrets/**)``, ``sort --files0=list`` (``list`` naming ``secrets/key``) printed the
denied file; ``md5sum --che sums`` and ``file --files-f=list`` told its hash and type. A prefix of
a list option now adds "" (and a prefix of a file option its value) wherever the model does not
know the word, and ``cksum`` (coreutils 9) is modelled with its ``-c``, ``-l`` and ``-w``.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from shellrt.analysis import analyze
from tests._governance import envelope_text, isolated_workspace, run_bash

pytestmark = pytest.mark.anyio

_LISTS = [
    "sort --files0=list", "sort --files0-f list", "sort -r --files0-fro=list", "wc --files0=list",
    "du --files0-f=list", "file --files-f=list", "file --files list", "md5sum --che sums", "md5sum --c sums",
    "sha256sum --chec sums", "cksum --ch sums", "cksum -c sums", "cksum -wc sums",
]


@pytest.mark.parametrize("command", _LISTS)
def test_an_abbreviated_list_option_makes_the_reads_unknown(command: str) -> None:
    analysis = analyze(command)
    assert "" in analysis.read_paths, (command, analysis.read_paths)


@pytest.mark.parametrize(
    ("command", "path"),
    [("date --fi=secret", "secret"), ("date --refer secret", "secret"), ("diff --from-f=secret x", "secret"),
     ("grep --exclude-f=secret x f", "secret"), ("sort --random-so=secret f", "secret"),
     ("file --magic=secret f", "secret")],
)
def test_an_abbreviated_file_option_names_its_file(command: str, path: str) -> None:
    analysis = analyze(command)
    assert path in analysis.read_paths, (command, analysis.read_paths)


@pytest.mark.parametrize("command", ["sort -r f", "wc -l f", "md5sum f", "cksum f", "sort -- --files0=x", "cksum -a md5 f"])
def test_other_commands_keep_known_reads(command: str) -> None:
    assert "" not in analyze(command).read_paths, command


def test_sort_prints_the_listed_files(tmp_path: Path) -> None:
    sort = shutil.which("sort")
    assert sort is not None
    (tmp_path / "key").write_text("hunter2\n")
    (tmp_path / "list").write_bytes(b"key\0")
    out = subprocess.run([sort, "--files0=list"], cwd=tmp_path, capture_output=True, text=True, timeout=30)
    assert "hunter2" in out.stdout, out


async def test_the_bash_tool_asks_under_allow_rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = isolated_workspace(tmp_path, monkeypatch)
    (ws / "secrets").mkdir()
    (ws / "secrets" / "key").write_text("hunter2\n")
    (ws / "list").write_bytes(b"secrets/key\0")
    (ws / "names").write_text("secrets/key\n")
    md5sum = shutil.which("md5sum")
    assert md5sum is not None
    sums = subprocess.run([md5sum, "secrets/key"], cwd=ws, capture_output=True, text=True, check=True).stdout
    (ws / "sums").write_text(sums)
    commands = ["sort --files0=list", "wc --files0=list", "md5sum --che sums", "file --files-f=names",
                "cksum -c sums"]
    envelopes = await run_bash(
        ws, commands, mode="default", id_prefix="r15lo",
        allow=["Bash(sort:*)", "Bash(wc:*)", "Bash(md5sum:*)", "Bash(file:*)", "Bash(cksum:*)"],
        deny=["Read(./secrets/**)"],
    )
    for command, envelope in zip(commands, envelopes, strict=True):
        text = envelope_text(envelope)
        assert envelope.is_error and "hunter2" not in text and "secrets/key:" not in text, (command, text)
