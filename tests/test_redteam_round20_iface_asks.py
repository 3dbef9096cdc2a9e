"""Red team round 20 (iface): the Python API's permission prompt under concurrent and nested asks.

Calls that may run side by side (reads, fetches) each ask at once, and the runtime handed every
ask to the approver at the same moment: two `TerminalApprover` prompts printed into each other
and the person's "y" went to whichever thread read it first (not the call whose prompt was on
the screen); a `callback_approver` function (a dialog, ``input()``) was entered twice at once,
and again from inside itself when it used the runtime while answering. An approver now answers
one ask at a time (a waiting ask stays cancellable, and is never put to the person once its call
was cancelled); an ask made while that approver is answering in the same task tree is denied
(waiting would deadlock); a callback's answer that is not an answer is denied as a failure that
says what it returned. Real `Runtime` sessions, real Read calls of files outside the workspace.
"""

from __future__ import annotations

import itertools
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

import shellrt
from shellrt.permissions import ApprovalRequest, ApprovalResponse, TerminalApprover, callback_approver
from shellrt.permissions.approvers import one_ask_at_a_time
from shellrt.protocol import ToolUseBlock
from shellrt.server.mcp_approval import elicitation_approver
from shellrt.tools.read import ReadTool
from tests._governance import envelope_text, isolated_workspace

pytestmark = pytest.mark.anyio

_ids = itertools.count()


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolated_workspace(tmp_path, monkeypatch)


def _outside(ws: Path, *names: str) -> list[Path]:
    """Files outside the workspace: reading each asks in the default mode."""
    where = ws.parent / f"outside{next(_ids)}"
    where.mkdir()
    paths = [where / name for name in names]
    for path in paths:
        path.write_text(f"content of {path.name}\n")
    return paths


def _reads(paths: list[Path]) -> list[ToolUseBlock]:
    return [ToolUseBlock(id=f"r20a{next(_ids)}", name="Read", input={"file_path": str(p)}) for p in paths]


def _runtime(ws: Path, approver: Any) -> shellrt.Runtime:
    return shellrt.Runtime(
        ws, "local", session_dir=ws.parent / f"s{next(_ids)}", tools=[ReadTool()], approver=approver
    )


async def test_a_callback_answers_one_ask_at_a_time(ws: Path) -> None:
    inside, most = [0], [0]
    lock = threading.Lock()

    def answer(request: ApprovalRequest) -> bool:
        with lock:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        time.sleep(0.3)  # a person reading the prompt
        with lock:
            inside[0] -= 1
        return True

    paths = _outside(ws, "a", "b", "c")
    async with _runtime(ws, callback_approver(answer)) as rt:
        envelopes = await rt.run_envelopes(_reads(paths))
    assert all(not e.is_error for e in envelopes), [envelope_text(e) for e in envelopes]
    assert most[0] == 1, f"the callback was entered {most[0]} times at once"


async def test_a_plain_async_function_given_to_the_runtime_answers_one_ask_at_a_time(ws: Path) -> None:
    inside, most = [0], [0]

    async def answer(request: ApprovalRequest) -> ApprovalResponse:
        inside[0] += 1
        most[0] = max(most[0], inside[0])
        await anyio.sleep(0.3)
        inside[0] -= 1
        return ApprovalResponse(behavior="allow")

    paths = _outside(ws, "a", "b", "c")
    async with _runtime(ws, answer) as rt:
        envelopes = await rt.run_envelopes(_reads(paths))
    assert all(not e.is_error for e in envelopes), [envelope_text(e) for e in envelopes]
    assert most[0] == 1, f"the function was entered {most[0]} times at once"
    # MCP elicitation puts each ask to its own dialog, bound to its request: left concurrent.
    assert one_ask_at_a_time(elicitation_approver) is elicitation_approver


class _Screen:
    def __init__(self) -> None:
        self.text = ""
        self.lock = threading.Lock()

    def write(self, text: str) -> int:
        with self.lock:
            self.text += text
        return len(text)

    def flush(self) -> None:
        pass


class _Person:
    """A terminal's stdin: a person who reads the screen for a while, then answers the prompt
    shown last: "y" to reading ``allowed``, "n" to anything else."""

    def __init__(self, screen: _Screen, allowed: Path) -> None:
        self.screen, self.allowed = screen, allowed

    def readline(self) -> str:
        time.sleep(0.4)
        with self.screen.lock:
            text = self.screen.text
        if text.endswith("message to the model (optional): "):
            return "\n"
        last = text.rsplit("shellrt wants to run: ", 1)[-1].split("\n", 1)[0]
        return "y\n" if last == f"Read {self.allowed}" else "n\n"


async def test_the_person_s_answer_goes_to_the_call_on_the_screen(ws: Path) -> None:
    screen = _Screen()
    paths = _outside(ws, "allowed", "refused")
    terminal = TerminalApprover(stdin=_Person(screen, paths[0]), stdout=screen)  # type: ignore[arg-type]
    async with _runtime(ws, terminal) as rt:
        envelopes = await rt.run_envelopes(_reads(paths))
    allowed = [p.name for p, e in zip(paths, envelopes, strict=True) if not e.is_error]
    assert allowed == ["allowed"], (allowed, screen.text)
    # Each prompt is whole: its question comes before the next prompt begins.
    blocks = screen.text.split("shellrt wants to run: ")[1:]
    assert len(blocks) == 2 and all(b.count("choice [y/s/p/e/n]: ") == 1 for b in blocks), screen.text


async def test_a_cancelled_ask_waiting_its_turn_is_never_put_to_the_person(ws: Path) -> None:
    asked: list[str] = []

    def answer(request: ApprovalRequest) -> bool:
        asked.append(request.tool_input["file_path"])
        time.sleep(1.0)
        return True

    paths = _outside(ws, "x", "y")
    async with _runtime(ws, callback_approver(answer)) as rt:
        with anyio.move_on_after(0.5):
            await rt.run_envelopes(_reads(paths))
        await anyio.sleep(1.5)  # a late turn would have come by now
    assert len(asked) == 1, asked


async def test_an_ask_made_while_the_callback_answers_is_denied_not_nested(ws: Path) -> None:
    paths = _outside(ws, "outer", "inner")
    depth, inner_text = [0], []
    rt_box: list[shellrt.Runtime] = []

    async def answer(request: ApprovalRequest) -> bool:
        depth[0] += 1
        try:
            if request.tool_input["file_path"] == str(paths[0]):
                with anyio.fail_after(8):  # waiting for itself would never end
                    [inner] = await rt_box[0].run_envelopes(_reads([paths[1]]))
                inner_text.append(("error " if inner.is_error else "ran ") + envelope_text(inner))
            return depth[0] == 1
        finally:
            depth[0] -= 1

    async with _runtime(ws, callback_approver(answer)) as rt:
        rt_box.append(rt)
        [outer] = await rt.run_envelopes(_reads([paths[0]]))
    assert not outer.is_error, envelope_text(outer)
    assert inner_text and inner_text[0].startswith("error "), inner_text
    assert "while it was answering" in inner_text[0], inner_text


@pytest.mark.parametrize("returned", ["yes", 1, {"behavior": "allow"}, ApprovalResponse])
async def test_a_callback_answer_that_is_not_an_answer_is_a_failure_that_says_so(
    ws: Path, returned: Any
) -> None:
    [path] = _outside(ws, "z")
    async with _runtime(ws, callback_approver(lambda request: returned)) as rt:
        [envelope] = await rt.run_envelopes(_reads([path]))
    text = envelope_text(envelope)
    assert envelope.is_error, text
    assert "approval prompt failed" in text and type(returned).__name__ in text, text


async def test_plain_answers_still_work(ws: Path) -> None:
    [a, b, c] = _outside(ws, "t", "f", "n")
    answers = {str(a): True, str(b): False, str(c): None}
    async with _runtime(ws, callback_approver(lambda request: answers[request.tool_input["file_path"]])) as rt:
        envelopes = await rt.run_envelopes(_reads([a, b, c]))
    assert [e.is_error for e in envelopes] == [False, True, True], [envelope_text(e) for e in envelopes]
