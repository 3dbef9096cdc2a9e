"""Round 27, interfaces: an ask's deadline covered its whole dialogue (round 26 iface "Left").

Round 26 gave the terminal prompt one deadline for the whole ask. A person who chose "e" (edit)
and then typed the new input as JSON shared what was left of it with the time spent choosing:
answering each question in time was denied. Each question now has its own deadline; a silent
terminal still ends the ask at the first one (a dialogue has at most five questions). A real
pseudo-terminal as stdin.
"""

from __future__ import annotations

import os
import pty
import threading
import time
from collections.abc import Iterator
from typing import TextIO

import anyio
import pytest

from shellrt.permissions import ApprovalRequest, TerminalApprover
from tests.test_redteam_round26_iface_terminal_deadline import _Screen, _type_when_shown

pytestmark = pytest.mark.anyio

_STEP_S = 2.0


@pytest.fixture
def terminal() -> Iterator[tuple[int, TextIO]]:
    keyboard, side = pty.openpty()
    try:
        with open(side, encoding="utf-8", closefd=False) as stdin:
            yield keyboard, stdin
    finally:
        os.close(keyboard)
        os.close(side)


def _request() -> ApprovalRequest:
    return ApprovalRequest(
        tool_name="Bash", tool_input={"command": "make deploy"}, description="make deploy", reason="not read-only"
    )


def _slow_person(keyboard: int, screen: _Screen, prompt: str, text: bytes, after_s: float) -> None:
    """Types ``text`` ``after_s`` seconds after ``prompt`` is first on the screen."""

    def type_late() -> None:
        deadline = time.monotonic() + 30
        while prompt not in screen.shown() and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(after_s)
        os.write(keyboard, text)

    threading.Thread(target=type_late, daemon=True).start()


async def test_each_question_of_the_dialogue_has_its_own_deadline(terminal: tuple[int, TextIO]) -> None:
    keyboard, stdin = terminal
    screen = _Screen()
    approver = TerminalApprover(stdin=stdin, stdout=screen, timeout_s=_STEP_S)
    # Each answer comes 0.6 of a step after its question: in time for each, not for both together.
    _slow_person(keyboard, screen, "choice [y/s/p/e/n]: ", b"e\n", 0.6 * _STEP_S)
    _slow_person(keyboard, screen, "new input as one line of JSON: ", b'{"command": "make test"}\n', 0.6 * _STEP_S)
    with anyio.fail_after(30):
        answer = await approver(_request())
    assert answer.behavior == "allow", (answer, screen.shown())
    assert answer.updated_input == {"command": "make test"}, answer

    # A silent terminal after "e" still ends the ask at that question's deadline.
    _type_when_shown(keyboard, screen, "choice [y/s/p/e/n]: ", 2, b"e\n")
    started = time.monotonic()
    with anyio.fail_after(30):
        silent = await approver(_request())
    took = time.monotonic() - started
    assert silent.behavior == "deny" and "no answer within" in (silent.message or ""), silent
    assert _STEP_S * 0.9 < took < 4 * _STEP_S, took
