"""Red team round 47 (files7): a UTF-32 file was read as UTF-16, and Edit and Write broke it.

UTF-32 LE's byte order mark (``FF FE 00 00``) begins with UTF-16 LE's (``FF FE``). Read showed
such a file with a NUL between its characters, and Edit decoded it as UTF-16 too: its new text
went in as UTF-16 units among UTF-32 ones (bytes the model never asked for, a file no longer
valid in any encoding), and Write turned the whole file into UTF-16. Now the longer mark is
tried first, for Read, Edit and Write alike (one function, `_fileio.bom_encoding`), and a file
whose bytes do not fit the longer reading keeps the shorter one.
"""

from __future__ import annotations

import codecs
from pathlib import Path

import anyio
import pytest

from shellrt.tools.read import ReadTool
from shellrt.tools.write import WriteTool
from tests.test_tools_edit import edit, make_ctx, read

_CASES = [
    ("utf-32-le", codecs.BOM_UTF32_LE),
    ("utf-32-be", codecs.BOM_UTF32_BE),
    ("utf-16-le", codecs.BOM_UTF16_LE),  # a first character U+0000 starts like UTF-32 LE
]


def _shown(ctx: object, path: Path) -> str:
    tool = ReadTool()

    async def go() -> str:
        out = await tool.call(tool.parse_input({"file_path": str(path)}), ctx)  # type: ignore[arg-type]
        return str(tool.to_model_content(out.data))

    return anyio.run(go)


def _write(ctx: object, path: Path, content: str) -> None:
    tool = WriteTool()

    async def go() -> None:
        inp = tool.parse_input({"file_path": str(path), "content": content})
        assert (await tool.validate(inp, ctx)).ok  # type: ignore[arg-type]
        await tool.call(inp, ctx)  # type: ignore[arg-type]

    anyio.run(go)


@pytest.mark.parametrize(("encoding", "bom"), _CASES, ids=[c[0] for c in _CASES])
def test_read_edit_and_write_keep_a_bom_declared_encoding(tmp_path: Path, encoding: str, bom: bytes) -> None:
    (tmp_path / ".session").mkdir()
    ctx = make_ctx(tmp_path)
    lead = "\0" if encoding == "utf-16-le" else ""
    text = f"{lead}héllo\r\nb\r\nc\r\n"
    path = tmp_path / "f.txt"
    path.write_bytes(bom + text.encode(encoding))
    if not lead:
        shown = _shown(ctx, path)
        assert "héllo" in shown and "\0" not in shown, repr(shown)
    read(ctx, path)
    edit(ctx, file_path=str(path), old_string="b", new_string="B\nX")
    want = f"{lead}héllo\r\nB\r\nX\r\nc\r\n"
    assert path.read_bytes() == bom + want.encode(encoding), path.read_bytes()
    read(ctx, path)
    _write(ctx, path, "x\ny\n")
    assert path.read_bytes() == bom + "x\r\ny\r\n".encode(encoding), path.read_bytes()
