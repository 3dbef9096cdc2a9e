"""Red team, round 36 (review3): a git index that expands without bound in the host's memory.

`shellrt.tools._tracked` reads a workspace's ``.git/index`` on the host to show tracked files the
ignore files hide. Version 4 compresses each path as "strip N bytes of the previous one, then add
these": an entry that strips nothing and adds one byte costs 65 bytes of index but is one byte
longer than the last, so n entries hold n²/2 bytes of names. A 1 MB index the repository plants
(16,000 entries) became 128 MB of names (and as much again decoded); the 64 MB the bound lets
through, ~500 GB: the host's memory, from a file a command writes. Now a name past ``PATH_MAX``
or names past the index bound in all refuse the index (nothing added, as for an oversized one).
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

from shellrt.tools._tracked import tracked_under
from tests._timing import cpu_seconds


def _bomb(entries: int) -> bytes:
    head = bytearray(62)
    head[24:28] = (0o100644).to_bytes(4, "big")
    entry = bytes(head) + b"\x00" + b"a" + b"\x00"  # strip 0 bytes of the last name, add "a"
    return b"DIRC" + struct.pack(">II", 4, entries) + entry * entries + b"\x00" * 20


def test_v4_prefix_bomb_is_refused(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "index").write_bytes(_bomb(16_000))
    started = cpu_seconds()  # CPU, not wall: a loaded lane's wait for a core is not the reader's cost
    assert tracked_under(tmp_path, tmp_path) is None
    assert cpu_seconds() - started < 1.0  # 0.02 s of CPU idle (round 49); 128 MB of names built before


def test_long_names_kept_long_are_refused(tmp_path: Path) -> None:
    """Names under ``PATH_MAX`` each, grown once and then kept long (strip one byte, add one)."""
    head = bytearray(62)
    head[24:28] = (0o100644).to_bytes(4, "big")
    first = bytes(head) + b"\x00" + b"a" * 4000 + b"\x00"
    entries = 16_000
    entry = bytes(head) + b"\x01" + b"b" + b"\x00"
    data = b"DIRC" + struct.pack(">II", 4, entries + 1) + first + entry * entries + b"\x00" * 20
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "index").write_bytes(data)
    started = cpu_seconds()
    assert tracked_under(tmp_path, tmp_path) is None  # 64 MB of names from a 1 MB index
    assert cpu_seconds() - started < 1.0


def test_a_real_v4_index_still_reads(tmp_path: Path) -> None:
    head = bytearray(62)
    head[24:28] = (0o100644).to_bytes(4, "big")
    first = bytes(head) + b"\x00" + b"src/a.py\x00"
    second = bytes(head) + b"\x04" + b"b.py\x00"  # strip "a.py", add "b.py"
    data = b"DIRC" + struct.pack(">II", 4, 2) + first + second + b"\x00" * 20
    os.makedirs(tmp_path / ".git")
    (tmp_path / ".git" / "index").write_bytes(data)
    assert tracked_under(tmp_path, tmp_path) == ["src/a.py", "src/b.py"]
