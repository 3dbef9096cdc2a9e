"""Round 26 (perf, issue 22 item 2): a text result's transcript JSON is put together from its pieces.

Every call line's ``"model"`` was the session's JSON encoder run on the result block's dump
(~14 us at load for a four-key dict). `shellrt.runtime.session._result_json` writes a text
result (the shape of every shell call's) from `encode_basestring_ascii` pieces and sends any other
shape to the encoder. What a command prints ends up in ``content``: the line must be the same
bytes the encoder makes for any text -- quotes, backslashes, controls, non-ASCII, lone
surrogates (a file name that is not UTF-8), a fake closing ``"}`` -- or a reader would parse
another result than the call returned.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import shellrt
from shellrt.runtime.session import _TRANSCRIPT_LINE, TRANSCRIPT_FILE, _result_json
from tests._calls import one_call as _one

pytestmark = pytest.mark.anyio

TEXTS = [
    "",
    "(Bash completed with no output)",
    'he said "hi" \\ and left',
    '", "is_error": false}\n{"type": "call"',
    "line\nbreak\ttab\r\x00\x1b[31mred\x7f",
    "caf\u00e9 \u202e \U0001f600 \u2028",
    "lone \udcff surrogate \ud800",
]


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("is_error", [False, True])
def test_a_text_result_is_the_encoders_bytes(text: str, is_error: bool) -> None:
    model = {
        "type": "tool_result",
        "tool_use_id": f"toolu_{text[:3]}\u00e9",
        "content": text,
        "is_error": is_error,
    }
    line = _result_json(model)
    assert line == _TRANSCRIPT_LINE(model)
    assert json.loads(line) == model


OTHER_SHAPES: list[dict[str, Any]] = [
    {
        "type": "tool_result",
        "tool_use_id": "t",
        "content": [{"type": "text", "text": "x"}],
        "is_error": False,
    },
    {"tool_use_id": "t", "type": "tool_result", "content": "x", "is_error": False},
    {"type": "tool_result", "tool_use_id": "t", "content": "x", "is_error": False, "extra": 1},
    {"type": "tool_result", "tool_use_id": "t", "content": "x", "is_error": 0},
    {"type": "tool_result", "tool_use_id": "t", "content": "x"},
    {"type": "other", "tool_use_id": "t", "content": "x", "is_error": False},
]


@pytest.mark.parametrize("model", OTHER_SHAPES)
def test_any_other_shape_goes_through_the_encoder(model: dict[str, Any]) -> None:
    assert _result_json(model) == _TRANSCRIPT_LINE(model)


async def test_a_calls_line_holds_the_result_it_returned(tmp_path: Path) -> None:
    ws, session = tmp_path / "ws", tmp_path / "session"
    ws.mkdir()
    async with shellrt.Runtime(ws, "local", mode="bypassPermissions", session_dir=session) as rt:
        block = await _one(rt, "Bash", command="printf '%s\\n' '\", \"is_error\": true}' caf\u00e9")
    lines = [json.loads(raw) for raw in (session / TRANSCRIPT_FILE).read_text().splitlines()]
    calls = [line for line in lines if line.get("type") == "call"]
    assert len(calls) == 1
    assert calls[0]["model"] == block
    assert calls[0]["model"]["is_error"] is False
