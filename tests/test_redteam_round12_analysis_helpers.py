"""Red team, round 12 (command analysis): read-only programs whose option runs another program.

- ``file -z`` / ``--uncompress`` / ``--uncompress-noreport``: libmagic pipes a compressed file
  through an external decompressor (``zstd -cd``, ``lz4``, ``lrzip``, ...) looked up on PATH, so
  ``file -z x.zst`` ran whatever ``zstd`` the PATH names while judged read-only (``rg -z`` was
  already refused for the same reason);
- ``diff -l`` (``--paginate``): diff forks ``pr`` on its output. The long spelling was refused,
  the short one was judged read-only.

Both are now not read-only; the plain forms stay read-only. Each runs for real (the premise) and
through the Bash tool on the local backend, where governance is the only guard.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from shellrt.analysis import analyze
from shellrt.protocol import ResultEnvelope
from tests._governance import envelope_text as _text
from tests._governance import isolated_workspace, run_bash

pytestmark = pytest.mark.anyio

_FILE_DECOMPRESS = ["file -z x.zst", "file --uncompress x.zst", "file --uncompress-noreport x.zst",
                    "file -bz x.zst", "file -zL x.zst", "file -kz x.zst"]
_DIFF_PAGINATE = ["diff -l a b", "diff -ul a b", "diff -lq a b", "diff --paginate a b"]


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolated_workspace(tmp_path, monkeypatch)


async def _bash(ws: Path, commands: list[str], *, mode: str, **kw: Any) -> list[ResultEnvelope]:
    return await run_bash(ws, commands, mode=mode, id_prefix="r12hp", **kw)


def _fake_decompressor(tmp_path: Path, marker: Path) -> Path:
    """A directory holding a ``zstd`` that leaves ``marker`` (what a hostile PATH entry would hold)."""
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    fake = bin_dir / "zstd"
    fake.write_text(f"#!/bin/sh\ntouch {marker}\ncat >/dev/null\n")
    fake.chmod(0o755)
    return bin_dir


def _zst(path: Path) -> None:
    # The zstd frame magic: libmagic recognises it and picks the zstd decompressor.
    path.write_bytes(bytes.fromhex("28b52ffd") + b"\x00" * 16)


def test_file_z_runs_the_decompressor_on_path(tmp_path: Path) -> None:
    marker = tmp_path / "PWNED"
    bin_dir = _fake_decompressor(tmp_path, marker)
    _zst(tmp_path / "x.zst")
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    subprocess.run(["bash", "--norc", "-c", "file -z x.zst"], cwd=tmp_path, env=env, capture_output=True, timeout=20)
    assert marker.exists()  # the premise: file -z executes a program found on PATH


def test_diff_l_runs_pr(tmp_path: Path) -> None:
    assert shutil.which("pr"), "coreutils pr is needed"
    (tmp_path / "a").write_text("one\n")
    (tmp_path / "b").write_text("two\n")
    out = subprocess.run(["bash", "--norc", "-c", "diff -l a b"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=20).stdout
    assert "Page 1" in out  # pr's page header: diff ran pr


@pytest.mark.parametrize("command", _FILE_DECOMPRESS + _DIFF_PAGINATE)
def test_an_option_that_runs_a_program_is_not_read_only(command: str) -> None:
    analysis = analyze(command)
    assert not analysis.read_only, (command, analysis.reasons)
    assert not analysis.concurrency_safe, command


def test_plain_file_and_diff_stay_read_only() -> None:
    for command in ("file x.zst", "file -b x", "file -L --mime-type x", "diff a b", "diff -u a b", "diff -rq a b",
                    "diff --label=x a b"):
        analysis = analyze(command)
        assert analysis.read_only, (command, analysis.reasons)


@pytest.mark.parametrize("mode", ["default", "plan"])
async def test_file_z_does_not_run_a_decompressor_unasked(ws: Path, monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path, mode: str) -> None:
    marker = tmp_path / "PWNED"
    bin_dir = _fake_decompressor(tmp_path, marker)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    _zst(ws / "x.zst")
    results = await _bash(ws, _FILE_DECOMPRESS, mode=mode)
    for envelope in results:
        assert envelope.is_error, _text(envelope)
    assert not marker.exists()


async def test_diff_l_is_not_run_unasked(ws: Path) -> None:
    (ws / "a").write_text("one\n")
    (ws / "b").write_text("two\n")
    [envelope] = await _bash(ws, ["diff -l a b"], mode="default")
    assert envelope.is_error, _text(envelope)
    assert "Page 1" not in _text(envelope)


async def test_plain_file_still_runs(ws: Path) -> None:
    (ws / "a").write_text("one\n")
    [envelope] = await _bash(ws, ["file -b a"], mode="default")
    assert not envelope.is_error, _text(envelope)
