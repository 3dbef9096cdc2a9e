"""Red team round 40 (review14): the session's kept input is the caller's object, not a copy of it.

`_starting` and `_record` keep a small input (`KEPT_WHOLE_CHARS`) as the very object the caller gave
(round 40 speed reuses it from `_running` for the record). A Python caller that builds its next
call by changing that dict in place (``block.input["command"] = ...``) and sends it under the same
id changed the session's record too: the new command was answered with the old command's result
and never ran -- a resend answered with another call's result, where a reused id must be refused.
The same holds for a change made while the call ran (start and record keep what was started).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

from shellrt.protocol import ToolUseBlock
from shellrt.runtime import Runtime
from shellrt.runtime.messages import MessageFormatError


def _text(envelope: Any) -> str:
    return str(envelope.model_dump() if hasattr(envelope, "model_dump") else envelope)


def test_an_input_changed_in_place_and_resent_is_refused_not_replayed(tmp_path: Path) -> None:
    """Failed before: the changed command got the first command's result and did not run."""
    ws = tmp_path / "ws"
    ws.mkdir()
    target = ws / "second.txt"

    async def main() -> tuple[str, str]:
        async with Runtime(ws, "local", session_dir=tmp_path / "s", mode="bypassPermissions") as rt:
            given: dict[str, Any] = {"file_path": str(ws / "first.txt"), "content": "one"}
            block = ToolUseBlock(id="w1", name="Write", input=given)
            first = await rt.run_envelopes([block])
            given["file_path"] = str(target)  # the caller's next call, built in place
            given["content"] = "two"
            second = await rt.run_envelopes([ToolUseBlock(id="w1", name="Write", input=given)])
            return _text(first[0]), _text(second[0])

    first, second = anyio.run(main)
    assert (ws / "first.txt").read_text() == "one", first
    assert second != first, "another call under a used id was answered with the first call's result"
    assert "named another" in second, second
    assert not target.exists()


def test_the_same_call_resent_is_still_answered_from_its_record(tmp_path: Path) -> None:
    """Behaviour kept (passes before and after): a resend of an unchanged input replays."""
    ws = tmp_path / "ws"
    ws.mkdir()

    async def main() -> tuple[str, str]:
        async with Runtime(ws, "local", session_dir=tmp_path / "s", mode="bypassPermissions") as rt:
            given: dict[str, Any] = {"file_path": str(ws / "a.txt"), "content": "one"}
            first = await rt.run_envelopes([ToolUseBlock(id="w1", name="Write", input=given)])
            again = await rt.run_envelopes([ToolUseBlock(id="w1", name="Write", input=dict(given))])
            return _text(first[0]), _text(again[0])

    first, again = anyio.run(main)
    assert first == again


def test_an_input_changed_while_it_runs_keeps_what_started(tmp_path: Path) -> None:
    """Failed before: a change made while the call ran was recorded as what ran; a resend of what
    actually ran was then refused and the changed input, which never ran, was answered from it."""
    ws = tmp_path / "ws"
    ws.mkdir()
    given: dict[str, Any] = {"command": "sleep 0.5; echo ran-$((6*7))", "description": "d"}

    async def main() -> tuple[str, str, str]:
        async with Runtime(ws, "local", session_dir=tmp_path / "s", mode="bypassPermissions") as rt:
            out: list[str] = []

            async def run() -> None:
                env = await rt.run_envelopes([ToolUseBlock(id="b1", name="Bash", input=given)])
                out.append(_text(env[0]))

            async with anyio.create_task_group() as tg:
                tg.start_soon(run)
                await anyio.sleep(0.2)
                given["command"] = "echo changed"  # after the start line, before the record
            started = {"command": "sleep 0.5; echo ran-$((6*7))", "description": "d"}
            again = await rt.run_envelopes([ToolUseBlock(id="b1", name="Bash", input=started)])
            changed = await rt.run_envelopes([ToolUseBlock(id="b1", name="Bash", input=dict(given))])
            return out[0], _text(again[0]), _text(changed[0])

    first, again, changed = anyio.run(main)
    assert "ran-42" in first, first
    assert again == first, "a resend of what ran is answered from its record"
    assert "named another" in changed, changed


def test_one_id_twice_in_a_list_of_blocks_runs_nothing(tmp_path: Path) -> None:
    """Failed before: `run_envelopes` and `stream` (the Python API; `run` refuses such a message)
    ran both blocks: `_replay` of every block is worked out before any starts."""
    ws = tmp_path / "ws"
    ws.mkdir()

    async def main() -> list[str]:
        errors: list[str] = []
        async with Runtime(ws, "local", session_dir=tmp_path / "s", mode="bypassPermissions") as rt:
            for use_id, runner in (("d1", "envelopes"), ("d2", "stream")):
                block = ToolUseBlock(id=use_id, name="Bash", input={"command": "echo x >> n.txt"})
                try:
                    if runner == "envelopes":
                        await rt.run_envelopes([block, block])
                    else:
                        _ = [e async for e in rt.stream([block, block])]
                except MessageFormatError as exc:
                    errors.append(str(exc))
        return errors

    errors = anyio.run(main)
    assert not (ws / "n.txt").exists(), (ws / "n.txt").read_text()
    assert len(errors) == 2 and all("duplicate tool_use id" in e for e in errors), errors


def test_a_small_input_of_escaped_characters_is_kept_small_and_still_told_apart() -> None:
    """Its JSON text is up to 12 bytes a character (astral \\u escapes): kept as a digest past
    `KEPT_WHOLE_CHARS`, and a resend and another input are still told apart."""
    from shellrt.runtime import session

    given = {"content": "\U0001f600" * 1000}
    kept = session._kept_input(given)
    assert len(repr(kept)) < 1000, "a small input's escaped text kept whole"
    assert session._same_input(kept, {"content": "\U0001f600" * 1000})
    assert not session._same_input(kept, {"content": "\U0001f600" * 999 + "x"})
    given["content"] = "changed"
    assert session._same_input(kept, {"content": "\U0001f600" * 1000}), "kept what was given then"
