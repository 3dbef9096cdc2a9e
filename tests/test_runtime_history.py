"""History in, legal history out: pairing repair, Runtime.restore, resent calls answered from records (issue 23)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel, ConfigDict

from shellrt.protocol import (
    PermissionResult,
    Tool,
    ToolContext,
    ToolOutput,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)
from shellrt.runtime import MessageFormatError, Runtime
from shellrt.runtime.messages import MISSING_RESULT, repair_history
from shellrt.tools import builtin_tools

pytestmark = pytest.mark.anyio


def use(id_: str, name: str = "Bash", **input_: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": id_, "name": name, "input": input_}


def result(id_: str, text: str = "ok", *, error: bool = False) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": id_, "content": text, "is_error": error}


def assistant(*blocks: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


def user(*blocks: Any) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def _legal(messages: list[dict[str, Any]]) -> None:
    """Every tool_use is answered exactly once, in the next message, and no result is unasked."""
    for i, message in enumerate(messages):
        if message["role"] != "assistant" or not isinstance(message["content"], list):
            continue
        ids = [b["id"] for b in message["content"] if b.get("type") == "tool_use"]
        if not ids:
            continue
        reply = messages[i + 1]
        assert reply["role"] == "user"
        answered = [b["tool_use_id"] for b in reply["content"] if b.get("type") == "tool_result"]
        assert answered == ids
        assert all(b.get("type") == "tool_result" for b in reply["content"][: len(ids)]), "results come first"


# --- repair_history ------------------------------------------------------------------------------
def test_repair_adds_missing_results_drops_orphans_and_duplicates() -> None:
    history = [
        {"role": "user", "content": "fix the bug"},
        assistant({"type": "text", "text": "looking"}, use("a", command="ls"), use("b", command="pwd")),
        user(
            {"type": "text", "text": "note"}, result("b", "/w"), result("zz", "orphan"), result("b", "again")
        ),
        assistant(use("a", command="ls"), use("c", command="id")),  # "a" again: a duplicate tool_use
        user(result("c", "uid=0")),
        user(result("c", "late duplicate")),
        assistant(use("d", command="date")),  # the crash came here: no result
    ]
    repaired, changes = repair_history(history)
    _legal(repaired)
    kinds = [(c.kind, c.tool_use_id) for c in changes]
    assert ("synthetic_result", "a") in kinds and ("synthetic_result", "d") in kinds
    assert ("orphan_result_dropped", "zz") in kinds
    assert ("duplicate_tool_use_dropped", "a") in kinds
    assert ("duplicate_result_dropped", "b") in kinds and ("duplicate_result_dropped", "c") in kinds
    assert ("empty_message_dropped", "") in kinds  # the late-duplicate user message had nothing left
    first_reply = repaired[2]["content"]
    assert first_reply[0] == {**result("a", MISSING_RESULT), "is_error": True}
    assert first_reply[1] == result("b", "/w") and first_reply[2] == {"type": "text", "text": "note"}
    assert repaired[-1] == user({**result("d", MISSING_RESULT), "is_error": True})
    assert all(c.describe().startswith("message ") for c in changes)


def test_repair_leaves_a_legal_history_alone_and_accepts_models() -> None:
    history: list[Any] = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [ToolUseBlock(id="t1", name="Read", input={"file_path": "a"})]},
        UserMessage(content=[ToolResultBlock(tool_use_id="t1", content="1\tx")]),
        {"role": "assistant", "content": "done"},
    ]
    repaired, changes = repair_history(history)
    assert changes == [] and len(repaired) == 4
    _legal(repaired)
    with pytest.raises(MessageFormatError, match="list of messages"):
        repair_history({"role": "user", "content": "x"})
    with pytest.raises(MessageFormatError, match=r"messages\[0\]"):
        repair_history([{"type": "tool_use", "id": "x", "name": "Bash", "input": {}}])


# --- the runtime ---------------------------------------------------------------------------------
class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Deferred(Tool[_In, str]):
    name = "Weather"
    input_model = _In
    defer_loading = True
    touches_environment: ClassVar[bool] = False

    def prompt(self) -> str:
        return "Weather forecast for a city."

    async def check_permissions(self, tool_input: _In, ctx: ToolContext) -> PermissionResult:
        return PermissionResult.allow("harmless")

    async def call(self, tool_input: _In, ctx: ToolContext) -> ToolOutput[str]:
        return ToolOutput("sunny")

    def to_model_content(self, output: str) -> str:
        return output


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return workspace


def _runtime(ws: Path) -> Runtime:
    return Runtime(
        ws,
        "local",
        session_dir=ws.parent / "session",
        tools=[*builtin_tools(), _Deferred()],
        allow=["Bash", "Edit", "Read"],
    )


def _text(block: dict[str, Any]) -> str:
    content = block["content"]
    return content if isinstance(content, str) else "\n".join(b.get("text", "") for b in content)


async def test_run_refuses_user_messages_and_conversations(ws: Path) -> None:
    async with _runtime(ws) as rt:
        with pytest.raises(MessageFormatError, match=r"restore"):
            await rt.run(user(result("x")))
        with pytest.raises(MessageFormatError, match=r"restore"):
            await rt.run([{"role": "user", "content": "hi"}, assistant(use("a", command="ls"))])


async def test_a_resent_call_is_answered_from_its_recorded_result(ws: Path) -> None:
    call = assistant(use("c1", command="echo ran >> count.txt; wc -l < count.txt"))
    async with _runtime(ws) as rt:
        first = await rt.run(call)
        again = await rt.run(call)
        assert first == again and _text(first["content"][0]).strip() == "1"
        assert (ws / "count.txt").read_text() == "ran\n", "the command ran once"
        other = await rt.run(assistant(use("c2", command="echo ran >> count.txt")))
        assert not other["content"][0]["is_error"] and (ws / "count.txt").read_text() == "ran\nran\n"


async def test_a_message_of_resent_calls_is_still_a_checkpoint(ws: Path) -> None:
    """Nothing runs for a resent call, yet `run` must let cancellation in and other tasks run:
    a caller looping on resent calls was a busy loop nothing could stop."""
    import anyio

    call = assistant(use("loop1", command="true"))
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await anyio.sleep(0)
            ticks += 1

    async with _runtime(ws) as rt:
        await rt.run(call)
        rounds = 0
        async with anyio.create_task_group() as tg:
            tg.start_soon(tick)
            with anyio.move_on_after(0.3):
                while rounds < 200_000:
                    await rt.run(call)
                    rounds += 1
            tg.cancel_scope.cancel()
    assert rounds < 200_000, "the loop of resent calls was never cancelled"
    assert ticks > 0, "no other task ran while resent calls were answered"


async def test_restore_rebuilds_state_and_never_reruns_answered_calls(ws: Path) -> None:
    (ws / "a.txt").write_text("hello\n")
    todos = [{"content": "Fix it", "status": "in_progress", "activeForm": "Fixing it"}]
    history = [
        {"role": "user", "content": "go"},
        assistant(use("s1", "ToolSearch", query="select:Weather"), use("r1", "Read", file_path="a.txt")),
        user(
            result(
                "s1",
                'Found 1 tool for "select:Weather"; they are loaded and can be called from your next '
                "message:\n- Weather: Weather forecast for a city.",
            ),
            result("r1", "     1\thello"),
        ),
        assistant(use("w1", "TodoWrite", todos=todos), use("b1", command="echo side-effect > b.txt")),
        user(result("w1", "Todos have been updated"), result("b1", "recorded output")),
        assistant(use("b2", command="echo side-effect > c.txt")),  # crashed before its result
    ]
    async with _runtime(ws) as rt:
        assert "Weather" not in [t.name for t in rt.visible_tools()]
        restored = rt.restore(history)
        assert [(c.kind, c.tool_use_id) for c in restored.changes] == [("synthetic_result", "b2")]
        _legal(restored.messages)
        assert restored.discovered_tools == ["Weather"] and rt.visible_tools()[-1].name == "Weather"
        assert restored.todos == 1 and rt.context.tool_state["TodoWrite"][0].content == "Fix it"
        assert restored.stale_reads == [str((ws / "a.txt").resolve())]

        # Answered calls are answered from the record; nothing runs again.
        replay = await rt.run(history[3])
        assert [_text(b) for b in replay["content"]][1] == "recorded output"
        crashed = await rt.run(history[5])
        assert crashed["content"][0]["is_error"] and _text(crashed["content"][0]) == MISSING_RESULT
        assert not (ws / "b.txt").exists() and not (ws / "c.txt").exists()

        # The file read before the restart is stale: Edit asks for a fresh Read, then works.
        edit = assistant(use("e1", "Edit", file_path="a.txt", old_string="hello", new_string="bye"))
        refused = (await rt.run(edit))["content"][0]
        assert refused["is_error"] and "read it again" in _text(refused)
        await rt.run(assistant(use("r2", "Read", file_path="a.txt")))
        done = await rt.run(
            assistant(use("e2", "Edit", file_path="a.txt", old_string="hello", new_string="bye"))
        )
        assert not done["content"][0]["is_error"], done
        assert (ws / "a.txt").read_text() == "bye\n"
        weather = await rt.run(assistant(use("w9", "Weather")))
        assert _text(weather["content"][0]) == "sunny"
