"""Red team, round 13 (command analysis): ``who FILE`` and ``users FILE`` print a file the analysis did not read.

``who`` and ``users`` were modelled as taking no path operands, but both read a utmp-format file
named by their one operand (``who /var/log/wtmp``) and print its user, line and host fields. The
read path was missing, so ``Read(./secrets/**)`` never met ``who secrets/sessions``: the local
backend printed the denied file's records. ``pgrep --pidfile F`` read F unreported too.

The operand is now a read path (``who am i``, two operands, is not a file); so is ``--pidfile``.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path
from typing import Any

import pytest

from shellrt.analysis import analyze
from shellrt.protocol import ResultEnvelope
from tests._governance import envelope_text as _text
from tests._governance import isolated_workspace, run_bash

pytestmark = pytest.mark.anyio


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolated_workspace(tmp_path, monkeypatch)


async def _bash(ws: Path, commands: list[str], *, mode: str, **kw: Any) -> list[ResultEnvelope]:
    return await run_bash(ws, commands, mode=mode, id_prefix="r13u", **kw)


def _utmp(path: Path) -> None:
    """One glibc x86-64 utmp record (384 bytes): a USER_PROCESS of user SECRETUSER."""
    record = bytearray(384)
    struct.pack_into("<hxxi", record, 0, 7, 4242)
    record[8:40] = b"pts/9".ljust(32, b"\0")
    record[44:76] = b"SECRETUSER".ljust(32, b"\0")
    record[76:332] = b"secret.example".ljust(256, b"\0")
    path.write_bytes(bytes(record))


@pytest.mark.parametrize("program", ["who", "users"])
def test_the_program_prints_the_file_in_the_real_shell(tmp_path: Path, program: str) -> None:
    _utmp(tmp_path / "sessions")
    path = shutil.which(program)
    if path is None:
        pytest.skip(f"{program} is not installed")
    out = subprocess.run([path, "sessions"], cwd=tmp_path, capture_output=True, text=True, timeout=30)
    assert "SECRETUSER" in out.stdout, out


@pytest.mark.parametrize(
    ("command", "path"),
    [("who secrets/sessions", "secrets/sessions"), ("who -a f", "f"), ("who -- f", "f"), ("users f", "f"),
     ("pgrep --pidfile=f x", "f"), ("pgrep --pidfile f x", "f")],
)
def test_the_file_is_a_read_path(command: str, path: str) -> None:
    analysis = analyze(command)
    assert path in analysis.read_paths, (command, analysis.read_paths)
    assert analysis.read_only  # a read, still: rules judge where


@pytest.mark.parametrize("command", ["who", "who am i", "who -b", "users", "pgrep -f x"])
def test_forms_without_a_file_read_nothing(command: str) -> None:
    analysis = analyze(command)
    assert analysis.read_only and analysis.read_paths == [], (command, analysis.read_paths)


@pytest.mark.parametrize("program", ["who", "users"])
async def test_a_read_deny_rule_covers_the_file(ws: Path, program: str) -> None:
    (ws / "secrets").mkdir()
    _utmp(ws / "secrets" / "sessions")
    [envelope] = await _bash(ws, [f"{program} secrets/sessions"], mode="default", deny=["Read(./secrets/**)"])
    assert envelope.is_error, _text(envelope)
    assert "SECRETUSER" not in _text(envelope)
