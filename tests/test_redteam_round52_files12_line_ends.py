"""Red team round 52 (files12): an Edit judged unique on bytes the model never saw.

Read numbers lines at ``\\n`` and drops a CRLF's ``\\r``: in a file with both line endings,
``x = 1\\r\\ny = 2`` and ``x = 1\\ny = 2`` are shown alike. Edit looked for ``old_string`` in one
line-ending form only (the file's dominant one first, then the other), so the model's
``old_string`` that it saw twice "matched once": the Edit changed one of them, whichever form came
first, and said "1 replacement" (not "matches 2 times"); ``replace_all`` left the other form's
occurrences as they were. Now the match is judged as the model sees the file: each ``\\n`` of
``old_string`` matches a line break of either form, and each occurrence keeps its own line ending.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from shellrt.protocol import ToolExecutionError
from shellrt.tools.read import ReadTool

sys.path.insert(0, str(Path(__file__).parent))
from test_tools_edit import edit, make_ctx  # noqa: E402

#: Two occurrences Read shows alike, one in each line-ending form, in files dominated by either.
_MIXED = {
    "crlf_first": b"x = 1\r\ny = 2\r\nz = 3\r\nx = 1\ny = 2\n",
    "lf_dominant_crlf_pair": b"x = 1\ny = 2\nz = 3\nq\nx = 1\r\ny = 2\r\n",
    "lf_first": b"x = 1\ny = 2\nz = 3\r\nq\r\nx = 1\r\ny = 2\r\n",
}


def _read_text(ctx: object, path: Path) -> str:
    tool = ReadTool()

    async def go() -> str:
        out = await tool.call(tool.parse_input({"file_path": str(path)}), ctx)  # type: ignore[arg-type]
        text = tool.to_model_content(out.data)
        assert isinstance(text, str)
        return text

    return anyio.run(go)


@pytest.mark.parametrize("name", sorted(_MIXED))
def test_an_old_string_shown_twice_is_not_unique(tmp_path: Path, name: str) -> None:
    f = tmp_path / name
    f.write_bytes(_MIXED[name])
    ctx = make_ctx(tmp_path)
    shown = _read_text(ctx, f)
    # The premise: the model sees the two pairs alike.
    assert shown.count("\tx = 1\n") == 2 and "\r" not in shown, shown
    with pytest.raises(ToolExecutionError, match="matches 2 times"):
        edit(ctx, file_path=str(f), old_string="x = 1\ny = 2", new_string="CHANGED")
    assert f.read_bytes() == _MIXED[name]


def test_replace_all_changes_every_occurrence_each_in_its_own_line_ending(tmp_path: Path) -> None:
    f = tmp_path / "m.txt"
    f.write_bytes(b"x = 1\r\ny = 2\r\nz\r\nx = 1\ny = 2\nw\r\n")
    ctx = make_ctx(tmp_path)
    _read_text(ctx, f)
    content, _ = edit(ctx, file_path=str(f), old_string="x = 1\ny = 2", new_string="A\nB\nC", replace_all=True)
    assert "2 replacements" in content
    assert f.read_bytes() == b"A\r\nB\r\nC\r\nz\r\nA\nB\nC\nw\r\n"


def test_a_pair_unique_as_shown_still_edits_in_place(tmp_path: Path) -> None:
    f = tmp_path / "u.txt"
    f.write_bytes(b"a\r\nb\r\nc\nd\n")
    ctx = make_ctx(tmp_path)
    _read_text(ctx, f)
    edit(ctx, file_path=str(f), old_string="b\nc", new_string="B\nC")
    assert f.read_bytes() == b"a\r\nB\r\nC\nd\n"


def test_the_shown_match_still_refuses_to_split_a_utf8_character(tmp_path: Path) -> None:
    # Not UTF-8 as a whole (the stray FF): decoded as latin-1, where "Ã" is the first byte of é.
    f = tmp_path / "l1.txt"
    data = b"\xff stray\r\na\xc3\xa9\nb\r\n"
    f.write_bytes(data)
    ctx = make_ctx(tmp_path)
    _read_text(ctx, f)
    with pytest.raises(ToolExecutionError, match="inside a UTF-8 character"):
        edit(ctx, file_path=str(f), old_string="stray\na\u00c3", new_string="x")
    assert f.read_bytes() == data
