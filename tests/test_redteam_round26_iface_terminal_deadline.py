"""Round 26, interfaces: the interactive `TerminalApprover` waited for its person without end.

Round 25 gave the MCP ask a deadline and left the terminal prompt without one: its worker thread
sat in ``readline``, so a prompt nobody answered held the call (and the agent) forever, a call
cancelled while it asked could not end until someone typed a line, and that line, typed for the
next prompt, went to the abandoned ask. Now the ask waits at most ``$SHELLRT_APPROVAL_TIMEOUT``
seconds (or ``timeout_s``) and denies saying so; the terminal is waited on with ``select`` in the
approver's own loop, so an expired or cancelled ask leaves no reader behind, and an answer typed
before its question was shown (a late answer) is discarded. A real pseudo-terminal as stdin.
"""

from __future__ import annotations

import io
import os
import pty
import select
import threading
import time
from collections.abc import Iterator
from typing import TextIO

import anyio
import pytest

from shellrt.permissions import ApprovalRequest, TerminalApprover

pytestmark = pytest.mark.anyio


class _Screen(io.StringIO):
    """What the approver writes, readable by the test's person from another thread."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()

    def write(self, text: str) -> int:
        with self.lock:
            return super().write(text)

    def shown(self) -> str:
        with self.lock:
            return self.getvalue()


@pytest.fixture
def terminal() -> Iterator[tuple[int, int, TextIO]]:
    """A pseudo-terminal: the keyboard's side, the approver's side and that side as its stdin."""
    keyboard, side = pty.openpty()
    try:
        with open(side, encoding="utf-8", closefd=False) as stdin:
            yield keyboard, side, stdin
    finally:
        os.close(keyboard)
        os.close(side)


def _request(path: str) -> ApprovalRequest:
    return ApprovalRequest(
        tool_name="Write",
        tool_input={"file_path": path, "content": "x"},
        description=f"Write {path}",
        reason="writes outside the workspace",
    )


def _type_when_shown(keyboard: int, screen: _Screen, prompt: str, count: int, text: bytes) -> threading.Thread:
    """A person who types ``text`` once ``prompt`` is on the screen ``count`` times (at most 30 s)."""

    def person() -> None:
        deadline = time.monotonic() + 30
        while screen.shown().count(prompt) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        os.write(keyboard, text)

    thread = threading.Thread(target=person, daemon=True)
    thread.start()
    return thread


def _asking(stdin: TextIO, monkeypatch: pytest.MonkeyPatch, seconds: str) -> tuple[_Screen, TerminalApprover]:
    """An approver on ``stdin`` whose deadline comes from the environment (the old code read none)."""
    monkeypatch.setenv("SHELLRT_APPROVAL_TIMEOUT", seconds)
    screen = _Screen()
    return screen, TerminalApprover(stdin=stdin, stdout=screen)


async def test_an_unanswered_prompt_denies_at_its_deadline_and_its_late_answer_is_not_taken(
    terminal: tuple[int, int, TextIO], monkeypatch: pytest.MonkeyPatch
) -> None:
    keyboard, side, stdin = terminal
    screen, approver = _asking(stdin, monkeypatch, "1")
    first_done = threading.Event()

    def late_person() -> None:  # answers "y" to the first prompt, too late (or, before, after 8 s)
        first_done.wait(8)
        os.write(keyboard, b"y\n")

    late = threading.Thread(target=late_person, daemon=True)
    late.start()
    started = time.monotonic()
    first = await approver(_request("/tmp/first"))
    waited = time.monotonic() - started
    first_done.set()
    late.join()
    assert first.behavior == "deny", (first, waited)
    assert "no answer within 1 s" in (first.message or "") and "SHELLRT_APPROVAL_TIMEOUT" in (first.message or "")
    assert waited < 8, waited
    assert "no answer within 1 s" in screen.shown(), screen.shown()
    # The late "y" is on the terminal, unread: it must not answer the next question.
    assert select.select([side], [], [], 10)[0], "the late answer never reached the terminal"
    _type_when_shown(keyboard, screen, "choice [y/s/p/e/n]: ", 2, b"n\n")
    _type_when_shown(keyboard, screen, "message to the model (optional): ", 1, b"not this one\n")
    with anyio.fail_after(30):
        second = await approver(_request("/tmp/second"))
    assert second.behavior == "deny" and second.message == "not this one", (second, screen.shown())


async def test_a_call_cancelled_while_it_asks_leaves_no_reader_on_the_terminal(
    terminal: tuple[int, int, TextIO], monkeypatch: pytest.MonkeyPatch
) -> None:
    keyboard, side, stdin = terminal
    _, approver = _asking(stdin, monkeypatch, "60")
    rescue = threading.Timer(8, os.write, (keyboard, b"y\n"))  # before, only a line ended the ask
    rescue.start()
    started = time.monotonic()
    try:
        with anyio.move_on_after(0.5):
            await approver(_request("/tmp/cancelled"))
        took = time.monotonic() - started
    finally:
        rescue.cancel()
    assert took < 5, f"the cancelled ask held its call {took:.1f} s"
    # What the person types next stays on the terminal for whoever asks next.
    os.write(keyboard, b"n\n")
    assert select.select([side], [], [], 10)[0]
    time.sleep(0.3)  # a reader left behind would have taken it by now
    assert select.select([side], [], [], 0)[0], "a reader left behind took the next line"
    assert os.read(side, 100) == b"n\n"


def test_the_deadline_is_checked_when_the_approver_is_made(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SHELLRT_APPROVAL_TIMEOUT", raising=False)
    assert TerminalApprover(stdin=io.StringIO(), stdout=io.StringIO()).timeout_s == 600
    assert TerminalApprover(stdin=io.StringIO(), stdout=io.StringIO(), timeout_s=5).timeout_s == 5
    for bad in (0, -1, float("nan"), 10**9):
        with pytest.raises(ValueError, match="seconds a permission ask waits"):
            TerminalApprover(stdin=io.StringIO(), stdout=io.StringIO(), timeout_s=bad)
    monkeypatch.setenv("SHELLRT_APPROVAL_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="SHELLRT_APPROVAL_TIMEOUT='soon'"):
        TerminalApprover(stdin=io.StringIO(), stdout=io.StringIO())
