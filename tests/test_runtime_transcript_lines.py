"""Transcript lines are put together from encoded pieces, yet each is exactly the JSON of its
fields that ``json.dumps(..., ensure_ascii=True)`` makes, in the order readers have seen.

`Runtime._transcribe_start` and `Runtime._finish` write the fixed parts as text and encode
only what changes; re-encoding every parsed line must give the very same bytes, for a call
that ran alone, calls in a batch, a refused call, a replayed one, and inputs with non-ASCII
text, a lone surrogate, floats and nested values.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from shellrt.runtime import Runtime

pytestmark = pytest.mark.anyio

_START_KEYS = ["ts", "type", "tool_use_id", "tool_name", "input"]
_CALL_HEAD = [*_START_KEYS, "ran", "replayed", "is_error"]
_CALL_TAIL = ["elapsed_s", "total_chars", "persisted_path", "model", "ui", "audit"]


def _use(id_: str, **tool_input: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": id_, "name": "Bash", "input": tool_input}


async def test_each_line_is_the_json_of_its_fields(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    async with Runtime(ws, "local", session_dir=tmp_path / "s", allow=["Bash"]) as rt:
        alone = _use("toolu_lines_1", command="printf 'caf\\303\\251 \\\\ \"q\"'", description="é \ud800 ✓")
        await rt.run({"role": "assistant", "content": [alone]})
        batch = [_use("toolu_lines_2", command="echo a"), _use("toolu_lines_3", command="echo b")]
        await rt.run({"role": "assistant", "content": batch})
        refused = _use("toolu_lines_4", command="true", timeout=1.5)  # not an int: invalid, not run
        await rt.run({"role": "assistant", "content": [refused]})
        await rt.run({"role": "assistant", "content": [alone]})  # answered from the record
        await rt.run({"role": "assistant", "content": [_use("toolu_lines_5", command="exit 3")]})
        raw = rt.transcript_path.read_bytes()
    lines = raw.decode("ascii").splitlines()
    entries = [json.loads(line) for line in lines]
    for line, entry in zip(lines, entries, strict=True):
        assert json.dumps(entry, ensure_ascii=True) == line
    calls = {e["tool_use_id"]: e for e in entries if e["type"] == "call" and not e["replayed"]}
    starts = {e["tool_use_id"]: e for e in entries if e["type"] == "start"}
    assert sorted(starts) == [
        "toolu_lines_1",
        "toolu_lines_2",
        "toolu_lines_3",
        "toolu_lines_4",
        "toolu_lines_5",
    ]
    for use_id, start in starts.items():
        assert list(start) == _START_KEYS
        call = calls[use_id]
        keys = list(call)
        assert keys[: len(_CALL_HEAD)] == _CALL_HEAD and keys[-len(_CALL_TAIL) :] == _CALL_TAIL
        assert call["input"] == start["input"]
    first = calls["toolu_lines_1"]
    assert first["input"]["description"] == "é \ud800 ✓"
    assert first["ran"] is True and first["is_error"] is False and first["decision"] == "allow"
    assert first["model"]["content"] == 'café \\ "q"'
    assert calls["toolu_lines_4"]["ran"] is False and calls["toolu_lines_4"]["is_error"] is True
    assert calls["toolu_lines_4"]["input"]["timeout"] == 1.5
    assert calls["toolu_lines_5"]["is_error"] is True and isinstance(
        calls["toolu_lines_5"]["elapsed_s"], float
    )
    replayed = [e for e in entries if e["type"] == "call" and e["replayed"]]
    assert [e["tool_use_id"] for e in replayed] == ["toolu_lines_1"]
    assert "decision" not in replayed[0]
