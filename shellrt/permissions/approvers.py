"""Approvers: who answers an ask.

- `TerminalApprover` — the CLI's interactive prompt: allow once, allow always
  (for the session, or saved for the project), deny with a message to the
  model, or edit the input as JSON;
- `callback_approver` — adapts a plain (sync or async) function for the Python API;
- headless: no approver at all (``None``); the gate then denies after
  PermissionRequest hooks had their chance. `terminal_approver_if_interactive`
  returns None when stdin is not a terminal, so a piped CLI run is headless.

Both answer one ask at a time (`_Turns`): calls that run side by side ask at once, and two
prompts on one terminal printed into each other while the person's answer went to whichever
thread read it (red team round 20).
"""

from __future__ import annotations

import contextvars
import inspect
import json
import os
import sys
import threading
import time
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, TextIO

import anyio

from shellrt.permissions._approval_deadline import approval_timeout, unanswered
from shellrt.permissions._terminal_lines import AnswerExpired, AnswerWithdrawn, discard_pending, read_line
from shellrt.permissions.interfaces import ApprovalRequest, ApprovalResponse, Approver
from shellrt.permissions.shown import ascii_form, for_person, recap

__all__ = [
    "TerminalApprover",
    "answers_concurrently",
    "callback_approver",
    "one_ask_at_a_time",
    "terminal_approver_if_interactive",
]

_MENU = (
    "  [y] allow once\n"
    "  [s] allow always for this session{rules}\n"
    "  [p] allow always in this project (saved to .shellrt/settings.local.json){rules}\n"
    "  [e] edit the input (JSON), then allow once\n"
    "  [n] deny (you may tell the model why)\n"
)


#: The `_Turns` answering in this task tree: an ask made inside one is that approver re-entered.
_answering: contextvars.ContextVar[frozenset[int]] = contextvars.ContextVar(
    "shellrt_approver_answering", default=frozenset()
)
#: How often a waiting ask looks whether the approver is free (cancellable between looks).
_TURN_POLL_S = 0.02


class _Turns:
    """One ask at a time for one approver, whatever event loop or thread asks.

    Why: a person (or a callback written for one) answers one question at a time; two prompts
    at once interleave on the terminal, and the answer typed for the one on the screen goes to
    the other. A waiting ask stays cancellable, so a call cancelled meanwhile is never put to
    the person later. An ask made while this approver answers, from the same task tree (a
    callback that runs tools while it answers), would wait for itself: it is denied instead.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()

    async def take(
        self, request: ApprovalRequest, answer: Callable[[], Awaitable[ApprovalResponse]]
    ) -> ApprovalResponse:
        inside = _answering.get()
        if id(self) in inside:
            return ApprovalResponse(
                behavior="deny",
                message=(
                    f"Not asked: the approver was asked about {request.tool_name} while it was answering "
                    "another ask, from inside that answer (a callback that runs tools while it answers); "
                    "denied. Answer first, then run the call."
                ),
            )
        # Polled, not an anyio.Event: one approver may serve several event loops and threads,
        # and the waiting must stay cancellable (a to_thread lock wait would not be).
        while not self._lock.acquire(blocking=False):  # noqa: ASYNC110
            await anyio.sleep(_TURN_POLL_S)
        token = _answering.set(inside | {id(self)})
        try:
            return await answer()
        finally:
            _answering.reset(token)
            self._lock.release()


class _OneAtATime:
    """An approver that answers one ask at a time (`_Turns`)."""

    def __init__(self, answer: Approver) -> None:
        self._answer = answer
        self._turns = _Turns()

    async def __call__(self, request: ApprovalRequest) -> ApprovalResponse:
        return await self._turns.take(request, lambda: self._answer(request))


#: Approvers that put each ask to its own dialog, bound to its call (`answers_concurrently`).
_CONCURRENT: weakref.WeakSet[Any] = weakref.WeakSet()


def answers_concurrently(approver: Approver) -> Approver:
    """Mark ``approver`` as safe to ask several calls at once (each ask its own dialog, its answer
    bound to that ask: MCP elicitation); `one_ask_at_a_time` then leaves it as it is."""
    _CONCURRENT.add(approver)
    return approver


def one_ask_at_a_time(approver: Approver) -> Approver:
    """``approver`` answering one ask at a time, as the runtime hands it every approver.

    Why: a plain function given as ``Runtime(approver=…)`` was called for each of the calls that
    ran side by side at once (red team round 20); a person or a function written for one answers
    one question at a time. Left as it is: `TerminalApprover` and `callback_approver` (they take
    turns already) and approvers marked `answers_concurrently`."""
    if isinstance(approver, (TerminalApprover, _OneAtATime)) or approver in _CONCURRENT:
        return approver
    return _OneAtATime(approver)


class TerminalApprover:
    """Interactive prompt on a terminal. Anything unexpected (EOF, bad JSON twice) denies.

    Each question of an ask waits at most ``timeout_s`` seconds (default
    ``$SHELLRT_APPROVAL_TIMEOUT``, else 600) for its answer, then the ask denies saying so (round
    26; per question since round 27: a person who chose "e" has the whole time to type the new
    input; a dialogue has at most five questions, and a silent terminal ends it at the first). The wait is ``select`` on ``stdin``'s
    descriptor (`_terminal_lines`): an expired or cancelled ask leaves no reader behind to take
    the next line, and what was typed before a question is shown is discarded, not taken as its
    answer. A ``stdin`` without a descriptor (a Python object) is read by ``readline``, unbounded.
    """

    def __init__(
        self, stdin: TextIO | None = None, stdout: TextIO | None = None, *, timeout_s: float | None = None
    ) -> None:
        self.stdin = stdin if stdin is not None else sys.stdin
        self.stdout = stdout if stdout is not None else sys.stderr
        #: Seconds an ask waits for its answer (raises `ValueError` for a bad value or environment).
        self.timeout_s = approval_timeout(timeout_s)
        self._turns = _Turns()
        #: The ask in progress: its withdrawal.
        self._stop = threading.Event()
        #: The last ask expired or was withdrawn: its answer may still come, and is not the next's.
        self._stale = False

    async def __call__(self, request: ApprovalRequest) -> ApprovalResponse:
        return await self._turns.take(request, lambda: self._answer(request))

    async def _answer(self, request: ApprovalRequest) -> ApprovalResponse:
        fd = _descriptor(self.stdin)
        if fd is None:
            return await anyio.to_thread.run_sync(self._ask, request)
        finished = threading.Event()
        self._stop = threading.Event()

        def ask() -> ApprovalResponse:
            try:
                discard_pending(fd, stale=self._stale)  # typed before this question was shown
                self._stale = False
                return self._ask(request)
            finally:
                finished.set()

        try:
            return await anyio.to_thread.run_sync(ask, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            # The thread ends within one poll: no reader is left to take the next answer.
            self._stop.set()
            with anyio.CancelScope(shield=True):
                while not finished.is_set():  # noqa: ASYNC110
                    await anyio.sleep(_TURN_POLL_S)
            raise

    def _line(self, prompt: str) -> str | None:
        self.stdout.write(prompt)
        self.stdout.flush()
        fd = _descriptor(self.stdin)
        if fd is None:
            line = self.stdin.readline()
            return None if line == "" else line.rstrip("\n")
        raw = read_line(fd, time.monotonic() + self.timeout_s, self._stop)  # each question its own time
        if raw is None:
            return None
        return raw.decode(getattr(self.stdin, "encoding", None) or "utf-8", errors="replace").rstrip("\r")

    def _ask(self, request: ApprovalRequest) -> ApprovalResponse:
        try:
            return self._questions(request)
        except AnswerExpired:
            self._stale = True
            self.stdout.write(
                f"\nno answer within {self.timeout_s:g} s (SHELLRT_APPROVAL_TIMEOUT): denied; "
                "what is typed now is not taken as an answer\n"
            )
            self.stdout.flush()
            return ApprovalResponse(behavior="deny", message=unanswered(self.timeout_s))
        except AnswerWithdrawn:
            self._stale = True
            return ApprovalResponse(behavior="deny", message="The call was cancelled while it asked.")

    def _questions(self, request: ApprovalRequest) -> ApprovalResponse:
        # The model chose this text: escapes and controls are shown, never obeyed by the terminal.
        # One line: a remembered rule keeps a command's quoted newlines (round 17), the menu stays whole.
        rules = (
            f" ({for_person(', '.join(request.suggested_rules), one_line=True)})" if request.suggested_rules else ""
        )
        shown = for_person(request.description)
        self.stdout.write(f"\nshellrt wants to run: {shown}\n")
        if request.cwd:  # earlier calls may have moved it: ``./run.sh`` means the file there
            self.stdout.write(f"in directory: {for_person(request.cwd)}\n")
        in_ascii = ascii_form(shown)
        if in_ascii is not None:  # lookalike letters, invisible marks, right-to-left words: what runs
            self.stdout.write(f"in ASCII: {in_ascii}\n")
        self.stdout.write(f"why it asks: {for_person(request.reason)}\n")
        tall = recap(f"shellrt wants to run: {shown}")
        if tall is not None:  # the start may have scrolled away: repeat it above the menu
            self.stdout.write(tall + "\n")
        self.stdout.write(_MENU.format(rules=rules))
        for _ in range(3):
            choice = self._line("choice [y/s/p/e/n]: ")
            if choice is None:
                return ApprovalResponse(
                    behavior="deny", message="No answer (end of input); the call was denied."
                )
            choice = choice.strip().lower()
            if choice in ("y", "yes"):
                return ApprovalResponse(behavior="allow")
            if choice == "s":
                return ApprovalResponse(behavior="allow", remember="session")
            if choice == "p":
                return ApprovalResponse(behavior="allow", remember="project")
            if choice == "e":
                edited = self._edit(request.tool_input)
                if edited is None:
                    return ApprovalResponse(behavior="deny", message="The user could not supply valid input.")
                return ApprovalResponse(behavior="allow", updated_input=edited)
            if choice in ("n", "no", "d"):
                message = self._line("message to the model (optional): ") or ""
                return ApprovalResponse(
                    behavior="deny", message=message.strip() or "The user denied this call."
                )
            self.stdout.write("please answer y, s, p, e or n\n")
        return ApprovalResponse(behavior="deny", message="No valid answer; the call was denied.")

    def _edit(self, current: dict[str, Any]) -> dict[str, Any] | None:
        self.stdout.write(f"current input: {for_person(json.dumps(current, ensure_ascii=False))}\n")
        for _ in range(2):
            line = self._line("new input as one line of JSON: ")
            if line is None:
                return None
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                self.stdout.write(f"not JSON: {exc.msg}\n")
                continue
            if isinstance(value, dict):
                return value
            self.stdout.write("the input must be a JSON object\n")
        return None


def _descriptor(stream: TextIO) -> int | None:
    """``stream``'s file descriptor when the deadline reader can wait on it (POSIX), else None."""
    if os.name != "posix":
        return None
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError
        return None
    return fd if isinstance(fd, int) and fd >= 0 else None


def terminal_approver_if_interactive() -> Approver | None:
    """A `TerminalApprover` when stdin is a terminal, else None (headless)."""
    try:
        interactive = sys.stdin.isatty()
    except (AttributeError, ValueError):
        interactive = False
    return TerminalApprover() if interactive else None


CallbackResult = ApprovalResponse | bool | None


def callback_approver(
    fn: Callable[[ApprovalRequest], CallbackResult | Awaitable[CallbackResult]],
) -> Approver:
    """Wrap a function for the Python API: it may return an `ApprovalResponse`, True/False, or None (deny).

    Sync functions run in a worker thread so a slow callback does not block the event loop. The
    function answers one ask at a time (`_Turns`). Anything else it returns (``"yes"``, ``1``, a
    dict) raises `TypeError`, which the gate turns into a denial that names it: never an allow,
    and never a silent "denied" that hides the bug.
    """
    async def answer(request: ApprovalRequest) -> ApprovalResponse:
        if inspect.iscoroutinefunction(fn):
            result = await fn(request)
        else:
            result = await anyio.to_thread.run_sync(fn, request)
            if inspect.isawaitable(result):
                result = await result
        if isinstance(result, ApprovalResponse):
            return result
        if result is True:
            return ApprovalResponse(behavior="allow")
        if result is False or result is None:
            return ApprovalResponse(behavior="deny", message="The approver denied this call.")
        shown = repr(result)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise TypeError(
            f"the approval callback returned {type(result).__name__} {shown}; it must return an "
            "ApprovalResponse, True (allow), False or None (deny)"
        )

    return _OneAtATime(answer)
