"""Red team round 32 (files2): an Edit or Write whose result outgrows what the file tools hold.

Edit and Write refuse a file over ``MAX_EDIT_BYTES`` (64 MiB) because they hold it whole in
memory, but nothing bounded what they *made*: a ``replace_all`` Edit multiplies the file's
occurrences of ``old_string`` by ``new_string``'s length, on the host, before any check. A
repository's 80 KB file of 40,000 one-letter lines and a 1,700-character ``new_string`` made a
68 MB file (a 100 KB ``new_string`` would ask the host for 4 GB, 16 GB with one astral
character); a Write of CR line breaks into a CRLF file doubles its content likewise. Each is now
refused with a clear error before the new text is built, and the file is left as it was.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from shellrt.protocol import ToolExecutionError
from shellrt.tools import _fileio
from tests.test_tools_edit import edit, make_ctx, read
from tests.test_tools_write import write


def test_edit_and_write_refuse_results_over_the_file_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The limit is lowered to 1 MiB so the test stays cheap; the code path is the 64 MiB one.
    monkeypatch.setattr(_fileio, "MAX_EDIT_BYTES", 1 << 20)
    limit = _fileio.MAX_EDIT_BYTES
    root = tmp_path.resolve()
    (root / ".session").mkdir()
    ctx = make_ctx(root)
    lines = 4_000
    grow = root / "grow.txt"
    grow.write_bytes(b"a\n" * lines)
    read(ctx, grow)  # a partial read (the first 2,000 lines) is enough for Edit
    wide = limit // lines + 2  # lines x wide > MAX_EDIT_BYTES
    started = time.monotonic()
    with pytest.raises(ToolExecutionError, match=r"replace_all.*too large|too large.*replace_all") as info:
        edit(ctx, file_path=str(grow), old_string="a", new_string="b" * wide, replace_all=True)
    assert "Bash" in str(info.value)  # says what to do instead
    assert time.monotonic() - started < 5
    assert grow.read_bytes() == b"a\n" * lines  # unchanged
    # Below the limit the same Edit still works.
    edit(ctx, file_path=str(grow), old_string="a", new_string="bb", replace_all=True)
    assert grow.read_bytes() == b"bb\n" * lines

    crlf = root / "crlf.txt"
    crlf.write_bytes(b"x\r\ny\r\n")
    read(ctx, crlf)
    with pytest.raises(ToolExecutionError, match="too large"):
        write(ctx, file_path=str(crlf), content="\n" * (limit // 2 + 1))
    assert crlf.read_bytes() == b"x\r\ny\r\n"


def test_write_of_a_lone_surrogate_is_a_clear_refusal(tmp_path: Path) -> None:
    """JSON lets a model send ``"\\ud800"``; UTF-8 cannot hold it. Write crashed with a bare
    ``UnicodeEncodeError`` ("Write failed unexpectedly") for a new file and for an existing one
    whose encoding could not hold it either; now it says which character and what to do."""
    root = tmp_path.resolve()
    (root / ".session").mkdir()
    ctx = make_ctx(root)
    old = root / "old.txt"
    old.write_text("keep\n")
    read(ctx, old)
    for target in (root / "new.txt", old):
        with pytest.raises(ToolExecutionError, match=r"U\+D800.*character 2"):
            write(ctx, file_path=str(target), content="a\ud800b")
    assert not (root / "new.txt").exists()
    assert old.read_text() == "keep\n"
