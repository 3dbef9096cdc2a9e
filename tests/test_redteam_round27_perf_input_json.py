"""Round 27 (perf, issue 22 item 2): a call's input JSON in its transcript lines from its pieces.

Both lines of every call (start and call) carry the call's ``"input"``: the session's JSON encoder
ran on it each time (~4-7 us for a shell call's two keys). `shellrt.runtime.session._input_json`
writes a flat object of ``str`` keys and ``str``/``int``/``bool`` values from
`encode_basestring_ascii` pieces and sends any other shape to the encoder. The model writes the
input: a command text that closes the string early (``", "ran": true``), breaks the line or holds
lone surrogates must come out as the same bytes the encoder makes, or a transcript reader would
parse another call than the one that ran.
"""

from __future__ import annotations

import enum
import json
from pathlib import Path
from typing import Any

import pytest

import shellrt
from shellrt.runtime.session import _TRANSCRIPT_LINE, TRANSCRIPT_FILE, _input_json
from tests._calls import one_call as _one

pytestmark = pytest.mark.anyio

HOSTILE = [
    "",
    'echo "hi" \\ done',
    '"}, "ran": true, "x": {"',
    "line\nbreak\ttab\r\x00\x1b[31mred\x7f",
    "caf\u00e9 \u202e \U0001f600 \u2028",
    "lone \udcff surrogate \ud800",
]


class _Code(enum.IntEnum):
    ONE = 1


class _Text(str):
    def __repr__(self) -> str:  # pragma: no cover - never called by either path
        return "nope"


FLAT: list[dict[str, Any]] = [
    *({"command": text, "timeout": 30000} for text in HOSTILE),
    {},
    {"command": "true", "run_in_background": True, "dangerouslyDisableSandbox": False},
    {"timeout": -1, "big": 10**30, "zero": 0},
    {'k"\\\n\udcff\u00e9': "v"},
]

OTHER: list[Any] = [
    {"command": "true", "timeout": 1.5},
    {"command": "true", "timeout": float("nan")},
    {"command": None},
    {"command": ["a", "b"]},
    {"nested": {"command": "true"}},
    {"code": _Code.ONE},
    {"command": _Text("true")},
    {1: "int key"},
    {None: "none key", True: "bool key"},
    ["not", "a", "dict"],
    "text",
    None,
]


@pytest.mark.parametrize("value", FLAT + OTHER)
def test_the_input_is_the_encoders_bytes(value: Any) -> None:
    line = _input_json(value)
    assert line == _TRANSCRIPT_LINE(value)
    assert line.isascii() and "\n" not in line


async def test_a_calls_lines_hold_the_input_it_ran(tmp_path: Path) -> None:
    ws, session = tmp_path / "ws", tmp_path / "session"
    ws.mkdir()
    command = 'printf \'%s\' \'"}, "ran": false, "x": {"\' caf\u00e9'
    async with shellrt.Runtime(ws, "local", mode="bypassPermissions", session_dir=session) as rt:
        await _one(rt, "Bash", command=command, timeout=30000)
    lines = [json.loads(raw) for raw in (session / TRANSCRIPT_FILE).read_text().splitlines()]
    mine = [line for line in lines if line.get("type") in ("start", "call")]
    assert [line["type"] for line in mine] == ["start", "call"]
    for line in mine:
        assert line["input"]["command"] == command
        assert line["input"]["timeout"] == 30000
    assert mine[1]["ran"] is True


FACTS: list[dict[str, Any]] = [
    {
        "decision": "allow",
        "reason": 'allowed "by" \\ mode\n',
        "chain": ("mode: bypassPermissions", "part: 'true' program=true \udcff", "caf\u00e9"),
        "executed_input": {"command": '"}, "ran": true', "timeout": 30000, "description": None},
        "cwd": "/ws/\u00e9\n",
    },
    {"chain": ["a list", "of str"], "rewritten_by_hook": True},
    {"chain": ()},
    {"chain": ("one", 2)},
    {"chain": [1.5]},
    {"executed_input": {"nested": {"x": 1}}},
    {"rewritten_while_asking_by": ["hook"], "elapsed": 0.5},
    {"weird": object()},
]


@pytest.mark.parametrize("facts", FACTS)
def test_the_facts_are_the_encoders_bytes(facts: dict[str, Any]) -> None:
    from shellrt.runtime.session import _facts_json

    assert _facts_json(facts) == _TRANSCRIPT_LINE(facts)[1:-1]
    assert _facts_json(facts) == _TRANSCRIPT_LINE(facts)[1:-1]  # the second time from the memo


def test_a_chain_is_encoded_again_when_it_is_another_tuple() -> None:
    """The memo is by identity: an equal-looking tuple made since, or a new chain at a reused
    id, is encoded afresh (a chain that changes must never be written as the old one)."""
    from shellrt.runtime.session import _facts_json

    first = tuple(["mode: default", "3 tool check: ask"])
    assert '"3 tool check: ask"' in _facts_json({"chain": first})
    for i in range(200):  # ids of freed tuples come back: each must be its own text
        chain = tuple([f"step {i}", "x"])
        assert _facts_json({"chain": chain}) == _TRANSCRIPT_LINE({"chain": chain})[1:-1]
        del chain


def test_a_result_dump_is_pydantics() -> None:
    """`_finish` dumps a text result block from its four fields; anything else through pydantic."""
    from shellrt.protocol import TextBlock, ToolResultBlock
    from shellrt.runtime.session import _result_dump

    class Sub(ToolResultBlock):
        pass

    blocks = [
        ToolResultBlock(tool_use_id=f"t{text[:2]}", content=text, is_error=err)
        for text in HOSTILE
        for err in (False, True)
    ]
    blocks.append(ToolResultBlock(tool_use_id="t", content=[TextBlock(text="x")]))
    blocks.append(Sub(tool_use_id="t", content="x"))
    mutated = ToolResultBlock(tool_use_id="t", content="x")
    mutated.content = [TextBlock(text="changed")]  # not validated on assignment
    blocks.append(mutated)
    for block in blocks:
        assert _result_dump(block) == block.model_dump(mode="json")
        assert list(_result_dump(block)) == list(block.model_dump(mode="json"))
