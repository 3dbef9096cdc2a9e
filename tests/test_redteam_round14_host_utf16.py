"""Red team round 14 (host side): a UTF-16 file read whole into the model's context.

Read keeps a text file's result within `MAX_OUTPUT_CHARS` (100,000) and cuts lines at
`MAX_LINE_CHARS`, saying so; Read's results are never persisted to a file and previewed (that
would loop Read -> file -> Read), so that budget is the only bound on what one call puts in front
of the model. A file starting with a UTF-16 byte-order mark took another path, which had neither:
a sandboxed command wrote 2,000 lines of 1,990 characters in UTF-16 (8 MB, under the 10 MB
whole-file limit) and one Read returned ~4,000,000 characters (failed before: 3,995,999 against
100,069 for the same text in UTF-8), and a longer line was cut without the "[line truncated]"
mark. Now UTF-16 text goes through the same line scanner as UTF-8: same budget, same notes.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import shellrt
from shellrt.tools.read import MAX_LINE_CHARS, MAX_OUTPUT_CHARS
from tests._governance import trust_env
from tests._rt13_host import tool_result
from tests.conftest import require

pytestmark = pytest.mark.anyio

#: Written inside the sandbox: the bytes come from the command's side.
_MAKE = (
    "import sys\n"
    "line = 'A' * 1990 + '\\n'\n"
    "open('u16le.txt', 'wb').write(b'\\xff\\xfe' + (line * 2000).encode('utf-16-le'))\n"
    "open('u16be.txt', 'wb').write(b'\\xfe\\xff' + (line * 2000).encode('utf-16-be'))\n"
    "open('long16.txt', 'wb').write(b'\\xff\\xfe' + ('head\\n' + 'B' * 50000 + '\\ntail\\n').encode('utf-16-le'))\n"
)


async def test_a_utf16_file_keeps_reads_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require(shutil.which("bwrap") is not None, "bwrap is needed")
    trust_env(tmp_path, monkeypatch)
    ws = tmp_path / "ws"
    ws.mkdir()
    async with shellrt.Runtime(ws, "bwrap", session_dir=tmp_path / "s", mode="bypassPermissions") as rt:
        made, failed = await tool_result(rt, "Bash", {"command": f"python3 - <<'EOF'\n{_MAKE}EOF"})
        assert not failed, made
        for name in ("u16le.txt", "u16be.txt"):
            text, failed = await tool_result(rt, "Read", {"file_path": str(ws / name)})
            assert not failed, text[:500]
            assert len(text) <= MAX_OUTPUT_CHARS + 2_000, (name, len(text))
            assert "budget was reached" in text and "call Read with offset=" in text, text[-400:]
            assert "\tAAAA" in text and "\x00" not in text
            # The next page continues where the budget stopped.
            last = int(text.split("Showing lines 1-", 1)[1].split(" ", 1)[0])
            more, failed = await tool_result(rt, "Read", {"file_path": str(ws / name), "offset": last + 1, "limit": 3})
            assert not failed and more.startswith(f"{last + 1:>6}\tAAAA"), more[:200]
        text, failed = await tool_result(rt, "Read", {"file_path": str(ws / "long16.txt")})
        assert not failed, text[:500]
        lines = text.splitlines()
        assert lines[0] == "     1\thead" and lines[2] == "     3\ttail", lines[:3]
        assert lines[1].endswith("… [line truncated]") and len(lines[1]) < MAX_LINE_CHARS + 40
        # Edit still takes the UTF-16 file and keeps its encoding and BOM.
        edited, failed = await tool_result(
            rt, "Edit", {"file_path": str(ws / "long16.txt"), "old_string": "tail", "new_string": "end"}
        )
        assert not failed, edited
    data = (ws / "long16.txt").read_bytes()
    assert data.startswith(b"\xff\xfe") and data[2:].decode("utf-16-le").endswith("\nend\n")
