"""The transcript's append-only file: lines land where the path points, even after a rotation."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

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


def test_a_line_another_writer_left_unfinished_is_not_glued_to(tmp_path: Path) -> None:
    """The last byte is trusted only while the file ends where this log's last line ended."""
    path = tmp_path / "t.jsonl"
    log = AppendLog(path)
    log.append(b"one\n")
    with open(path, "ab") as other:  # another writer, cut short (a full disk, a crash)
        other.write(b"half")
    log.append(b"two\n")
    assert path.read_bytes() == b"one\nhalf\ntwo\n"
    os.truncate(path, len(b"one\nhalf\ntw"))  # cut inside this log's own last line
    log.append(b"three\n")
    log.close()
    assert path.read_bytes() == b"one\nhalf\ntw\nthree\n"


def test_the_last_byte_is_read_only_when_the_file_moved_on(tmp_path: Path, monkeypatch: Any) -> None:
    """Back-to-back lines read nothing back (round 25: one ``pread`` a line saved); a size this
    log did not leave reads the last byte again."""
    reads: list[int] = []
    real = os.pread

    def pread(fd: int, n: int, offset: int) -> bytes:
        reads.append(offset)
        return real(fd, n, offset)

    monkeypatch.setattr(os, "pread", pread)
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"old\n")
    log = AppendLog(path)
    log.append(b"one\n")  # opened on a file this log did not write: read
    log.append(b"two\n")
    log.append(b"three\n")
    assert reads == [3]
    with open(path, "ab") as other:
        other.write(b"x\n")
    log.append(b"four\n")
    log.close()
    assert reads == [3, len(b"old\none\ntwo\nthree\nx\n") - 1]
    assert path.read_bytes() == b"old\none\ntwo\nthree\nx\nfour\n"
