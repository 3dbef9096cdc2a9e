"""Red team round 32 (files2): an Edit whose match splits a UTF-8 character of a latin-1-decoded file.

A file that is UTF-8 but for one stray byte (a latin-1 ``©`` pasted into a comment) is decoded as
latin-1 whole, one character a byte. ``old_string="©"`` (byte A9) then also matched the second
byte of every UTF-8 ``é`` (C3 A9): a ``replace_all`` made ``caf\\xc3(c)``, the ``é`` split and lost
for every UTF-8 reader. Now a match that begins or ends inside a UTF-8 sequence is refused with a
message saying so; matches on character boundaries still work.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.protocol import ToolExecutionError
from tests.test_tools_edit import edit, make_ctx, read


def test_a_match_inside_a_utf8_sequence_of_a_latin1_file_is_refused(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    (root / ".session").mkdir()
    ctx = make_ctx(root)
    f = root / "m.txt"
    original = b"caf\xc3\xa9 \xa9 2026\n"
    f.write_bytes(original)
    read(ctx, f)
    for old in ("\u00a9", "\u00c3", "f\u00c3"):  # starts, or ends, inside the UTF-8 "é"
        with pytest.raises(ToolExecutionError, match="inside a UTF-8"):
            edit(ctx, file_path=str(f), old_string=old, new_string="(c)", replace_all=True)
        assert f.read_bytes() == original
    edit(ctx, file_path=str(f), old_string=" \u00a9 ", new_string=" (c) ")  # whole characters: fine
    assert f.read_bytes() == b"caf\xc3\xa9 (c) 2026\n"
    edit(ctx, file_path=str(f), old_string="caf\u00e9", new_string="tea")  # now valid UTF-8: decoded so
    assert f.read_bytes() == b"tea (c) 2026\n"
    f.write_bytes(b"\xa9 caf\xc3\xa9\n")
    read(ctx, f)
    edit(ctx, file_path=str(f), old_string="caf\u00c3\u00a9", new_string="tea")  # the whole sequence: fine
    assert f.read_bytes() == b"\xa9 tea\n"
