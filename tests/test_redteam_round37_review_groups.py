"""Round 37 red team, review: a tool raising an exception group of its own.

Round 36 (runtime) answers whatever a tool's own code raises with a paired error result, except a
cancellation, the process's exit or interrupt, and any ``BaseExceptionGroup`` ("it may hold a
cancellation"). A tool that raised a group holding only its own ``BaseException`` subclass (what a
task group of its own raises when a child fails so) therefore ended the whole message: every call
of it, the Bash calls before and after too, lost its result. Now a group is answered when every
exception in it would be (read from the group itself, not a subclass's ``exceptions``); one holding
a cancellation, an interrupt or an exit still propagates. Real Runtime, real local sandbox.
"""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import Any

import pytest

import shellrt
from shellrt.permissions import callback_approver
from shellrt.protocol import ToolContext, ToolUseBlock
from shellrt.protocol.tool import ToolOutput
from shellrt.runtime.raised import answerable
from shellrt.tools.bash import Bash
from tests._governance import envelope_text, isolated_workspace
from tests.test_redteam_round37_review_names import Good, _In

pytestmark = pytest.mark.anyio

_ids = itertools.count()


class _Odd(BaseException):
    """Not an Exception: a tool's own BaseException subclass."""


class Grouping(Good):
    name = "Grouping"

    async def call(self, tool_input: _In, ctx: ToolContext) -> ToolOutput[str]:
        raise BaseExceptionGroup("the tool's own task group", [_Odd("a child failed"), _Odd("another")])


async def test_a_tools_own_group_is_answered_and_the_message_keeps_its_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = isolated_workspace(tmp_path, monkeypatch)
    async with shellrt.Runtime(
        ws, "local", session_dir=tmp_path / "s", tools=[Bash(), Grouping(), Good()], mode="default",
        allow=["Bash(echo:*)"], approver=callback_approver(lambda _r: True),
    ) as rt:
        envelopes = await rt.run_envelopes(
            [
                ToolUseBlock(id=f"r37ga{next(_ids)}", name="Bash", input={"command": "echo before"}),
                ToolUseBlock(id=f"r37gb{next(_ids)}", name="Grouping", input={}),
                ToolUseBlock(id=f"r37gc{next(_ids)}", name="Good", input={}),
            ]
        )
        [alone] = await rt.run_envelopes([ToolUseBlock(id=f"r37gd{next(_ids)}", name="Grouping", input={})])
    before, grouped, good = envelopes
    assert "before" in envelope_text(before) and envelope_text(good) == "good ran"
    for envelope in (grouped, alone):
        assert envelope.is_error and "_Odd: a child failed (and 1 more)" in envelope_text(envelope)


class _Hiding(BaseExceptionGroup):  # type: ignore[type-arg]
    """Shows a harmless list; holds a cancellation."""

    @property
    def exceptions(self) -> tuple[BaseException, ...]:  # type: ignore[override]
        return (_Odd("nothing to see"),)


def test_a_group_holding_a_cancellation_or_exit_still_propagates() -> None:
    assert answerable(BaseExceptionGroup("g", [_Odd("x"), BaseExceptionGroup("h", [_Odd("y")])]))
    for inner in (asyncio.CancelledError(), KeyboardInterrupt(), SystemExit(1), GeneratorExit()):
        assert not answerable(BaseExceptionGroup("g", [_Odd("x"), BaseExceptionGroup("h", [inner])]))
    assert not answerable(_Hiding("g", [asyncio.CancelledError()]))
    deep: Any = _Odd("leaf")
    for _ in range(100):
        deep = BaseExceptionGroup("nest", [deep])
    assert not answerable(deep)  # past the depth read: as before, it propagates
