"""Red team, round 14 (command analysis): option models that disagreed with the program on which
options take a value.

An option the model reads as a flag but the program reads with a value hides that value's file from
the read paths (``pgrep -F FILE`` is procps' ``--pidfile``; the model had ``-F`` as a flag, so
``pgrep -iFsecret x`` read ``secret`` unreported). An option the model reads with a value but the
program reads as a flag (``column -d``, util-linux's ``--table-noheadings``) or with an optional
attached value only (``od -w[BYTES]``) swallows the next word, which the program reads as a file:
``od -w secret`` and ``column -d secret`` print ``secret`` while the analysis named no read path.
Each model now matches ``--help`` of procps-ng 4 and coreutils/util-linux (checked below against the
installed programs where they exist).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from shellrt.analysis import analyze


@pytest.mark.parametrize(
    ("command", "path"),
    [
        ("pgrep -F secret x", "secret"),
        ("pgrep -iFsecret x", "secret"),
        ("pgrep -LF secret x", "secret"),
        ("pgrep -r S -F secret x", "secret"),
        ("od -w secret", "secret"),
        ("od -w8 secret", "secret"),
        ("column -d secret", "secret"),
        ("column -td secret", "secret"),
    ],
)
def test_the_file_is_a_read_path(command: str, path: str) -> None:
    analysis = analyze(command)
    assert path in analysis.read_paths, (command, analysis.read_paths)


@pytest.mark.parametrize("command", ["pgrep -O 5 x", "pgrep -r S x", "od -w16 -An f", "column -t -s , f"])
def test_values_are_not_read_paths(command: str) -> None:
    analysis = analyze(command)
    assert analysis.read_only, (command, analysis.reasons)
    assert not {"5", "S", "-An", ","} & set(analysis.read_paths), analysis.read_paths


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)


def test_the_programs_read_the_file(tmp_path: Path) -> None:
    (tmp_path / "secret").write_text("hello\n")
    (tmp_path / "pid").write_text(f"{os.getpid()}\n")
    if shutil.which("od"):
        assert "062550" in _run(["od", "-w", "secret"], tmp_path).stdout  # "he" as octal words
    if shutil.which("column") and "table-noheadings" in _run(["column", "--help"], tmp_path).stdout:
        assert "hello" in _run(["column", "-d", "secret"], tmp_path).stdout
    if shutil.which("pgrep") and "pidfile" in _run(["pgrep", "--help"], tmp_path).stdout:
        assert str(os.getpid()) in _run(["pgrep", "-F", "pid", "-f", "."], tmp_path).stdout
