"""Red team round 53 (files13): a file empty when Read judged it, filled before it was read.

Read takes a file's size from its ``fstat`` and streams a file of size 0 (a ``/proc``-like file)
up to 16 MiB. A command that filled an empty file between that ``fstat`` and the read (here: more
than 16 MiB) had its first 16 MiB shown as the whole file: no note that the rest was not scanned,
and the line count covered that part only. Now the scan looks one byte further and says the cut,
with the file's size as it was judged. (Edit and Write were safe: they compare the digest of the
whole file with the read's, which covers 16 MiB.)
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.tools import read as read_module
from shellrt.tools.read import MAX_PSEUDO_FILE_BYTES, ReadTool

sys.path.insert(0, str(Path(__file__).parent))
from test_tools_write import make_ctx  # noqa: E402


def test_a_file_filled_after_its_fstat_is_said_to_be_cut(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "filled.txt"
    f.write_bytes(b"")
    real = read_module._open_regular

    def command_fills_it(fd: int, label: str) -> Any:
        # Between Read's fstat (size 0) and its read: a command writes 20 MiB on four lines.
        f.write_bytes((b"y" * (5 << 20) + b"\n") * 4)
        return real(fd, label)

    monkeypatch.setattr(read_module, "_open_regular", command_fills_it)
    ctx = make_ctx(tmp_path)
    tool = ReadTool()

    async def go() -> str:
        out = await tool.call(tool.parse_input({"file_path": str(f)}), ctx)
        text = tool.to_model_content(out.data)
        assert isinstance(text, str)
        return text

    text = anyio.run(go)
    assert f.stat().st_size > MAX_PSEUDO_FILE_BYTES
    assert "Only the first 16 MiB of this file (its size was 0 when it was opened) were scanned" in text, text[-600:]
