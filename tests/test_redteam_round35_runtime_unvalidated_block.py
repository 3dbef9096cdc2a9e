"""Red team round 35 (runtime): a tool_use the Runtime takes is one the wire could have carried.

``ToolUseBlock.model_construct(...)`` and ``block.model_copy(update=...)`` skip validation, and a
harness may build blocks that way from the model's JSON (for speed). Such a block ran as given: an
id that is not a string (or is missing or empty), a name that is not one, ended the whole message in
a ``TypeError`` from the transcript's encoder, with the earlier calls' ids left "running" for good
(every resend refused). An input no JSON can carry (nested past the interpreter's recursion limit,
cyclic, a tuple key, a 5,000-digit int) did the same even through a validated block: the
transcript's start line encoded it before the executor's own checks could refuse the one call.
``Runtime.restore`` of such a result raised pydantic's serialization error: now a malformed history.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

import shellrt
from shellrt.protocol import ToolResultBlock, ToolUseBlock
from shellrt.runtime.messages import MessageFormatError
from tests._bwrap_session import require_bwrap


def _deep(levels: int) -> dict[str, Any]:
    top: dict[str, Any] = {}
    cur = top
    for _ in range(levels):
        cur["a"] = {}
        cur = cur["a"]
    return top


async def _text(rt: shellrt.Runtime, block: Any) -> tuple[bool, str]:
    out = await rt.run({"role": "assistant", "content": [block]})
    result = out["content"][0]
    return bool(result["is_error"]), str(result["content"])


def test_unvalidated_blocks_are_refused_and_bad_inputs_fail_one_call(tmp_path: Path) -> None:
    """Failed before: 8 of 8 unvalidated blocks raised TypeError/AttributeError or ran (an empty id,
    type 'text'); 4 of 4 unencodable inputs ended the message; the good call's id stayed 'running'."""
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "f.txt").write_text("hi\n")
    read = {"file_path": str(ws / "f.txt")}
    good = ToolUseBlock(id="good1", name="Read", input=read)
    bad_blocks = {
        "id int": ToolUseBlock.model_construct(id=7, name="Read", input=read),
        "id None": ToolUseBlock.model_construct(id=None, name="Read", input=read),
        "id empty": ToolUseBlock.model_construct(id="", name="Read", input=read),
        "id missing": ToolUseBlock.model_construct(name="Read", input=read),
        "id list (copy)": good.model_copy(update={"id": ["x"]}),
        "name int": ToolUseBlock.model_construct(id="n1", name=5, input=read),
        "name bytes (copy)": good.model_copy(update={"id": "n2", "name": b"Read"}),
        "type text": ToolUseBlock.model_construct(type="text", id="n3", name="Read", input=read),
    }
    cyclic: dict[str, Any] = {"file_path": "x"}
    cyclic["self"] = cyclic
    bad_inputs = {
        "deep": _deep(5000),
        "cyclic": cyclic,
        "tuple key": {(1, 2): "x"},
        "huge int": {"file_path": 10**5000},
    }

    async def scenario() -> None:
        async with shellrt.Runtime(ws, "bwrap", session_dir=tmp_path / "s") as rt:
            ran: list[str] = []
            for label, block in bad_blocks.items():
                for entry in ("run", "run_envelopes"):
                    try:
                        if entry == "run":
                            await rt.run({"role": "assistant", "content": [good, block]})
                        else:
                            await rt.run_envelopes([block])
                    except MessageFormatError as exc:
                        assert "model_validate" in str(exc), (label, str(exc))
                    except Exception as exc:  # noqa: BLE001 -- what it was before: name it
                        ran.append(f"{label} ({entry}): {type(exc).__name__}: {exc}")
                    else:
                        ran.append(f"{label} ({entry}): ran")
            assert not ran, ran
            for label, tool_input in bad_inputs.items():
                block = ToolUseBlock.model_construct(id=f"in-{label}", name="Read", input=tool_input)
                with anyio.fail_after(30):
                    is_error, text = await _text(rt, block)
                assert is_error, (label, text)
                # a resend of the same call is answered, not a crash
                is_error, text = await _text(rt, block)
                assert is_error, (label, text)
            # validated, through a dict: one call's error, the message's other call runs
            out = await rt.run(
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "deep-dict", "name": "Read", "input": _deep(5000)},
                    {"type": "tool_use", "id": "good2", "name": "Read", "input": read},
                ]}
            )  # fmt: skip
            assert out["content"][0]["is_error"] and "nest" in out["content"][0]["content"], out
            assert not out["content"][1]["is_error"], out
            # restore: a constructed result no JSON holds is refused as a malformed history
            with pytest.raises(MessageFormatError, match="model_validate"):
                rt.restore([
                    {"role": "assistant", "content": [good.model_copy(update={"id": "r1"})]},
                    {"role": "user", "content": [ToolResultBlock.model_construct(tool_use_id="r1", content=object())]},
                ])  # fmt: skip
            # nothing was left "running": the good call runs under its id
            is_error, text = await _text(rt, good)
            assert not is_error and "hi" in text, text

    anyio.run(scenario)


@pytest.mark.parametrize("entry", ["streaming", "stream"])
def test_other_entry_points_refuse_unvalidated_blocks(tmp_path: Path, entry: str) -> None:
    """Failed before: ``Runtime.stream`` and ``Runtime.streaming().add`` took an int id too."""
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    bad = ToolUseBlock.model_construct(id=7, name="Glob", input={"pattern": "*"})

    async def scenario() -> None:
        async with shellrt.Runtime(ws, "bwrap", session_dir=tmp_path / "s") as rt:
            if entry == "stream":
                with pytest.raises(MessageFormatError, match="model_validate"):
                    async for _ in rt.stream([bad, bad]):
                        pass
                return
            # raised inside the execution's task group: it comes wrapped in an exception group
            with pytest.raises(BaseExceptionGroup) as caught:
                async with rt.streaming() as stream:
                    stream.add(bad)
                    stream.close()
                    async for _ in stream.results():
                        pass
            refused = caught.value.subgroup(MessageFormatError)
            assert refused is not None and "model_validate" in str(refused.exceptions[0]), caught.value

    anyio.run(scenario)
