"""The reply's tool_result blocks are the transcript's (dumped once), and the message budget's when it applies."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from shellrt.runtime import Runtime

pytestmark = pytest.mark.anyio


def _message(*commands: tuple[str, str]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": id_, "name": "Bash", "input": {"command": command}}
            for id_, command in commands
        ],
    }


async def test_reply_blocks_match_the_transcript_unless_the_budget_replaced_them(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    async with Runtime(
        ws, "local", session_dir=tmp_path / "s", allow=["Bash"], message_budget_chars=20_000
    ) as rt:
        small = await rt.run(_message(("toolu_reply_1", "echo one"), ("toolu_reply_2", "echo two")))
        big = await rt.run(_message(("toolu_reply_3", "seq 1 3000"), ("toolu_reply_4", "seq 1 3000")))
        lines = [json.loads(x) for x in rt.transcript_path.read_text().splitlines()]
    models = {e["tool_use_id"]: e["model"] for e in lines if e.get("type") == "call"}
    assert small["content"] == [models["toolu_reply_1"], models["toolu_reply_2"]]
    assert small["content"][0]["content"] == "one"
    # Over the message budget: the reply carries the persisted form, not the transcript's full one.
    assert big["content"] != [models["toolu_reply_3"], models["toolu_reply_4"]]
    assert any("saved" in json.dumps(block) for block in big["content"])
