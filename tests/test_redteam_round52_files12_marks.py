"""Red team round 52 (files12): an Edit judged unique on a mark the file also holds as text.

Read shows a line break other than ``\\n`` inside a line as a visible mark (``\\r`` as U+240D,
U+2028 as ``⟨U+2028⟩``...; round 23). A hostile file holds the mark itself as text on one line and
the real break on another: Read shows the two lines alike. Edit matched ``old_string`` (copied
from Read, mark included) on the bytes only: "1 replacement", on the line of the repository's
choosing, and ``replace_all`` left the other. Now an ``old_string`` holding a mark is also counted
as Read shows the file (a mark matches itself or its break); when that differs, Edit refuses.
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

#: (file bytes, old_string copied from Read): the mark as text on one line, the break on another.
_CASES = {
    "cr_mark": ("key = a\u240db\nkey = a\rb\n".encode(), "key = a\u240db"),
    "ls_mark_crlf": ("k = a\u27e8U+2028\u27e9b\r\nk = a\u2028b\r\nz\n".encode(), "k = a\u27e8U+2028\u27e9b\n"),
}


def _read_text(ctx: object, path: Path) -> str:
    tool = ReadTool()

    async def go() -> str:
        out = await tool.call(tool.parse_input({"file_path": str(path)}), ctx)  # type: ignore[arg-type]
        text = tool.to_model_content(out.data)
        assert isinstance(text, str)
        return text

    return anyio.run(go)


@pytest.mark.parametrize("replace_all", [False, True])
@pytest.mark.parametrize("name", sorted(_CASES))
def test_a_mark_shown_for_a_real_break_too_is_not_unique(tmp_path: Path, name: str, replace_all: bool) -> None:
    data, old = _CASES[name]
    f = tmp_path / name
    f.write_bytes(data)
    ctx = make_ctx(tmp_path)
    shown = _read_text(ctx, f)
    first = old.split("\n")[0]
    assert shown.count("\t" + first + "\n") == 2, shown  # the premise: two lines shown alike
    with pytest.raises(ToolExecutionError, match="as Read shows"):
        edit(ctx, file_path=str(f), old_string=old, new_string="CHANGED\n" if old.endswith("\n") else "X",
             replace_all=replace_all)
    assert f.read_bytes() == data


def test_a_mark_held_only_as_text_still_edits(tmp_path: Path) -> None:
    f = tmp_path / "only.txt"
    f.write_bytes("a\u240db\nc\n".encode())
    ctx = make_ctx(tmp_path)
    _read_text(ctx, f)
    edit(ctx, file_path=str(f), old_string="a\u240db", new_string="ab")
    assert f.read_bytes() == b"ab\nc\n"
