"""Red team, round 20 (files): Edit changes the bytes it was asked to change, and no others.

Edit decodes a file, replaces a string and encodes it back. A file with a byte-order mark was
decoded with ``errors="replace"``: bytes its encoding cannot hold (a stray ``\\xff`` after a UTF-8
BOM, a UTF-16 file's odd last byte) became U+FFFD, and an Edit of any other line wrote U+FFFD back
in their place -- a silent change of bytes the model never saw or touched (a repository can hold
such files; so can a half-written log). Decoding is now lossless or falls back to latin-1 whole.
The other encodings the tools keep (UTF-16 without errors, CRLF and mixed line ends, invalid
UTF-8 without a BOM, a lone CR) are pinned here too.
"""

from __future__ import annotations

import codecs
from pathlib import Path

import pytest

import shellrt
from shellrt.tools._fileio import decode_bytes
from tests._calls import one_call as _one

pytestmark = pytest.mark.anyio


U16 = "alpha beta\n".encode("utf-16-le")
#: name -> (bytes before, bytes after replacing "alpha" with "ALPHA"): nothing else may change.
CASES: dict[str, tuple[bytes, bytes]] = {
    "utf8_bom_stray_bytes.txt": (
        codecs.BOM_UTF8 + b"alpha \xff\xfe beta\nkeep \xc3\n",
        codecs.BOM_UTF8 + b"ALPHA \xff\xfe beta\nkeep \xc3\n",
    ),
    "utf16_odd_byte.txt": (
        codecs.BOM_UTF16_LE + U16 + b"Z",
        codecs.BOM_UTF16_LE + "ALPHA beta\n".encode("utf-16-le") + b"Z",
    ),
    "utf16_lone_surrogate.txt": (
        codecs.BOM_UTF16_LE + U16 + b"\x00\xd8x\x00",
        codecs.BOM_UTF16_LE + "ALPHA beta\n".encode("utf-16-le") + b"\x00\xd8x\x00",
    ),
    "utf16_be.txt": (
        codecs.BOM_UTF16_BE + "alpha b\u00e9ta\n".encode("utf-16-be"),
        codecs.BOM_UTF16_BE + "ALPHA b\u00e9ta\n".encode("utf-16-be"),
    ),
    "crlf_mixed.txt": (b"alpha\r\nbeta\nc\r\nd\re\n", b"ALPHA\r\nbeta\nc\r\nd\re\n"),
    "invalid_utf8.txt": (b"alpha caf\xc3\xa9 \xff beta\n", b"ALPHA caf\xc3\xa9 \xff beta\n"),
}


async def test_edit_keeps_every_byte_it_did_not_replace(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    for name, (before, _) in CASES.items():
        (ws / name).write_bytes(before)
    changed = []
    async with shellrt.Runtime(
        workspace=ws, sandbox="local", mode="acceptEdits", session_dir=tmp_path / "s", settings_files=()
    ) as rt:
        for name, (before, after) in CASES.items():
            assert not (await _one(rt, "Read", file_path=str(ws / name)))["is_error"], name
            edit = await _one(rt, "Edit", file_path=str(ws / name), old_string="alpha", new_string="ALPHA")
            got = (ws / name).read_bytes()
            if edit["is_error"]:
                assert got == before, f"{name}: a refused edit changed the file"
                changed.append(f"{name}: refused ({str(edit['content'])[:80]})")
            elif got != after:
                changed.append(f"{name}: {before!r} -> {got!r}")
    assert not changed, changed


def test_decoding_gives_the_same_bytes_back() -> None:
    odd = [b"", codecs.BOM_UTF16_LE + b"\xff", codecs.BOM_UTF16_BE + b"\xdc\x00", codecs.BOM_UTF8 + b"\x80"]
    for data in [before for before, _ in CASES.values()] + odd:
        decoded = decode_bytes(data)
        assert decoded.encode(decoded.text) == data, data


async def test_write_replaces_all_of_a_utf16_file(tmp_path: Path) -> None:
    """Write keeps the BOM and encoding, not an odd last byte of the old content."""
    ws = tmp_path / "ws"
    ws.mkdir()
    f = ws / "w.txt"
    f.write_bytes(codecs.BOM_UTF16_LE + U16 + b"Z")
    async with shellrt.Runtime(
        workspace=ws, sandbox="local", mode="acceptEdits", session_dir=tmp_path / "s", settings_files=()
    ) as rt:
        assert not (await _one(rt, "Read", file_path=str(f)))["is_error"]
        assert not (await _one(rt, "Write", file_path=str(f), content="new\n"))["is_error"]
    assert f.read_bytes() == codecs.BOM_UTF16_LE + "new\n".encode("utf-16-le")
