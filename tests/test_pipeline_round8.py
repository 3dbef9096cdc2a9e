"""Eighth pipeline round (issue 22 item 2): what the per-call trims must keep.

Each test drives a real Runtime with real `true` processes and checks a guarantee the
trimmed code path still gives: the session state is written whenever it changed or its
file went away; the transcript has both of a call's lines, in order, on disk when `run`
returns, also after the file was rotated between calls.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from shellrt.runtime import Runtime
from shellrt.tools.todo_write import STATE_KEY as TODO_KEY
from shellrt.tools.todo_write import TodoItem
from shellrt.tools.tool_search import ORDER_KEY

pytestmark = pytest.mark.anyio


def _true(id_: str) -> dict[str, Any]:
    block = {"type": "tool_use", "id": id_, "name": "Bash", "input": {"command": "true"}}
    return {"role": "assistant", "content": [block]}


async def test_state_file_removed_between_calls_is_written_again(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    async with Runtime(ws, "local", session_dir=tmp_path / "s", mode="bypassPermissions") as rt:
        state = rt.session_dir / "state.json"
        await rt.run(_true("toolu_r8_state_1"))
        assert state.is_file()
        for n in range(2, 5):  # nothing of the state changed, but the file is gone each time
            state.unlink()
            await rt.run(_true(f"toolu_r8_state_{n}"))
            assert json.loads(state.read_text())["session_id"] == rt.session_id


async def test_discovered_tools_and_todos_changed_between_calls_are_saved(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    async with Runtime(ws, "local", session_dir=tmp_path / "s", mode="bypassPermissions") as rt:
        state = rt.session_dir / "state.json"
        ctx = rt.context
        await rt.run(_true("toolu_r8_disc_1"))
        assert json.loads(state.read_text())["discovered_tools"] == []
        ctx.discovered_tools.update({"Zeta", "Alpha"})
        ctx.tool_state[ORDER_KEY] = ["Zeta"]
        await rt.run(_true("toolu_r8_disc_2"))
        assert json.loads(state.read_text())["discovered_tools"] == ["Zeta", "Alpha"]
        ctx.discovered_tools.clear()  # emptied again: the saved order follows
        await rt.run(_true("toolu_r8_disc_3"))
        assert json.loads(state.read_text())["discovered_tools"] == []
        ctx.tool_state[TODO_KEY] = [TodoItem(content="Run it", status="pending", activeForm="Running it")]
        await rt.run(_true("toolu_r8_disc_4"))
        assert json.loads(state.read_text())["todos"][0]["content"] == "Run it"


async def test_transcript_has_both_lines_of_each_call_on_disk_also_after_rotation(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    async with Runtime(ws, "local", session_dir=tmp_path / "s", mode="bypassPermissions") as rt:
        transcript = rt.session_dir / "transcript.jsonl"
        for n in range(3):
            await rt.run(_true(f"toolu_r8_tr_{n}"))
            lines = [json.loads(x) for x in transcript.read_text().splitlines()]
            mine = [x for x in lines if x.get("tool_use_id") == f"toolu_r8_tr_{n}"]
            assert [x["type"] for x in mine][-1] == "call"
            assert len(mine) == 2 and mine[0]["type"] != "call"  # the write-ahead line came first
        transcript.rename(transcript.with_name("old.jsonl"))  # rotated by a person
        await rt.run(_true("toolu_r8_tr_rot"))
        lines = [json.loads(x) for x in transcript.read_text().splitlines()]
        assert [x.get("tool_use_id") for x in lines] == ["toolu_r8_tr_rot", "toolu_r8_tr_rot"]


async def test_a_lone_call_is_parsed_once_not_classified_and_bad_input_still_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from shellrt.tools.bash import Bash, ShellTool

    asked: list[object] = []
    parses: list[object] = []
    real_parse = ShellTool.parse_input

    def counting_parse(self: ShellTool, raw: Any) -> Any:
        parses.append(raw)
        return real_parse(self, raw)

    monkeypatch.setattr(Bash, "is_concurrency_safe", lambda self, i: asked.append(i) or True)
    monkeypatch.setattr(Bash, "parse_input", counting_parse)
    ws = tmp_path / "ws"
    ws.mkdir()
    async with Runtime(ws, "local", session_dir=tmp_path / "s", mode="bypassPermissions") as rt:
        reply = await rt.run(_true("toolu_r8_lone_1"))
        assert reply["content"][0]["is_error"] is False
        assert asked == []  # a message's only call shares no batch: nothing to classify
        assert len(parses) == 1  # parsed once, and that parse reaches the executor
        bad = {"type": "tool_use", "id": "toolu_r8_lone_2", "name": "Bash", "input": {"command": 5}}
        reply = await rt.run({"role": "assistant", "content": [bad]})
        assert reply["content"][0]["is_error"] is True
        assert "command" in str(reply["content"][0]["content"])
        # Two calls in one message are still classified (they may share a batch).
        two = [dict(_true(f"toolu_r8_lone_{n}")["content"][0]) for n in (3, 4)]
        await rt.run({"role": "assistant", "content": two})
        assert len(asked) >= 2
