"""The transcript's append-only file: lines land where the path points, even after a rotation."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from shellrt.runtime.append_log import AppendLog


def test_lines_are_appended_with_private_mode(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    log = AppendLog(path)
    log.append(b"one\n")
    log.append(b"two\n")
    log.close()
    assert path.read_bytes() == b"one\ntwo\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_removed_or_replaced_file_is_opened_again(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    log = AppendLog(path)
    log.append(b"one\n")
    path.unlink()  # removed while the session runs
    log.append(b"two\n")
    assert path.read_bytes() == b"two\n"
    os.rename(path, tmp_path / "rotated.jsonl")  # rotated: a new file takes the name
    path.write_bytes(b"")
    log.append(b"three\n")
    log.close()
    assert (tmp_path / "rotated.jsonl").read_bytes() == b"two\n"
    assert path.read_bytes() == b"three\n"


def test_close_is_idempotent_and_writing_after_it_reopens(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    log = AppendLog(path)
    log.close()
    log.append(b"x\n")
    log.close()
    log.close()
    assert path.read_bytes() == b"x\n"
