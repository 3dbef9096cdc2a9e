"""Many tool_use blocks of one assistant message -> results in tool_use order.

Scheduling: consecutive concurrency-safe calls form a parallel batch; any
other call runs alone, after everything before it has finished and before
anything after it starts. Input that fails to parse is treated as unsafe.
The grouping is judged on the model's input; a hook or an approver may rewrite it, so
the call itself runs in a slot judged on the final input: shared beside its batch when
that input is still concurrency-safe, exclusive (after the running siblings end, before
any other starts) when it is not. Context modifiers are applied strictly in tool_use order, once every earlier
call has finished — so calls in one batch all see the context as it was when
the batch began. A failing Bash-like call (``cancels_siblings_on_error``)
cancels its running batch siblings, which get a synthetic error result.

`StreamingExecution` accepts blocks one at a time as the model streams them,
starts safe ones early, and yields results in the original order.

Every envelope leaves here sendable (`shellrt.tools._sendable.sendable_envelope`): whatever
tool made it, no lone surrogate reaches the JSONL or MCP encoders (left-overs, round 15).
"""

from __future__ import annotations

import math
import os
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.abc import TaskGroup
from pydantic import BaseModel

from shellrt.protocol import ResultEnvelope, Tool, ToolContext, ToolUseBlock, error_envelope
from shellrt.runtime.execution import CallExecutor, CallOutcome, RunSlot, failed_outcome
from shellrt.runtime.interrupts import InterruptWatch
from shellrt.runtime.messages import checked_block
from shellrt.runtime.raised import answerable
from shellrt.tools._sendable import sendable_envelope

__all__ = [
    "MAX_PARALLEL_CALLS",
    "SIBLING_CANCELLED",
    "CallSlots",
    "StreamingExecution",
    "is_concurrency_safe",
    "max_parallel_calls",
    "run_blocks",
    "run_single",
]

SIBLING_CANCELLED = "Cancelled: a sibling command in the same parallel batch failed ({sibling}); this call was stopped. Re-run it if it is still needed."
INTERRUPTED = "Interrupted by the user; the call was stopped before it finished."
NOT_RUN_INTERRUPTED = "Interrupted by the user before this call started; it was not run."


#: Concurrency-safe calls of one message inside their tool's call at once (Claude Code's bound);
#: the rest wait for a slot. ``SHELLRT_MAX_PARALLEL_CALLS`` sets another.
MAX_PARALLEL_CALLS = 10


def max_parallel_calls() -> int:
    """The cap on concurrency-safe calls running at once: ``$SHELLRT_MAX_PARALLEL_CALLS`` or 10."""
    raw = os.environ.get("SHELLRT_MAX_PARALLEL_CALLS", "").strip()
    if not raw:
        return MAX_PARALLEL_CALLS
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(
            f"SHELLRT_MAX_PARALLEL_CALLS={raw!r}: give a whole number of at least 1 (default 10)"
        )
    return int(raw)


def is_concurrency_safe(executor: CallExecutor, block: ToolUseBlock) -> bool:
    """Whether ``block`` may share a parallel batch; anything uncertain is unsafe."""
    return _classify(executor, block)[0]


def _classify(executor: CallExecutor, block: ToolUseBlock) -> tuple[bool, BaseModel | None]:
    """(whether ``block`` may share a parallel batch, its parsed input when it parsed).

    The parsed input goes on to the executor, which then does not parse it again.
    """
    tool = executor.registry.get(block.name)
    parsed = _parsed(tool, block)
    if tool is None or parsed is None:
        return False, None
    try:
        return bool(tool.is_concurrency_safe(parsed)), parsed
    except BaseException as exc:
        if not answerable(exc):
            raise
        return False, parsed


def _parsed(tool: Tool[Any, Any] | None, block: ToolUseBlock) -> BaseModel | None:
    """``block``'s input as its tool parses it, or None (the executor then parses it and says
    what is wrong)."""
    if tool is None or not isinstance(block.input, dict):
        return None
    try:
        parsed: BaseModel = tool.parse_input(block.input)
    except BaseException as exc:  # any the executor answers (it parses again and says why)
        if not answerable(exc):
            raise
        return None
    return parsed


def _safe_input(tool: Tool[Any, Any], tool_input: BaseModel) -> bool:
    try:
        return bool(tool.is_concurrency_safe(tool_input))
    except BaseException as exc:
        if not answerable(exc):
            raise
        return False


class CallSlots:
    """Who may be inside a tool's call now: up to ``max_shared`` concurrency-safe calls, or one other.

    One per message here; the MCP server keeps one across its requests (`run_single`'s ``run_slot``).
    A call waiting to run alone holds back safe calls that have not started (so it is not
    starved), and runs once those already running have ended. Safe calls past the cap wait
    for one to end (without it, 600 calls of one message ran at once: a pids limit and the
    fd table were the only bound). Waiters queue in arrival order and a slot that frees is
    handed to the ones that can take it, and only those are woken (one shared wake-up for every
    waiter made a message of n calls cost O(n^2) wake-ups: 5,000 calls, ~25 million).
    """

    def __init__(self, max_shared: int = MAX_PARALLEL_CALLS) -> None:
        self._max_shared = max_shared
        self._shared = 0
        self._alone = False
        #: Calls waiting, in arrival order; each event is set once its slot is handed to it.
        #: (Deques: a hand-out is O(1); only a waiter cancelled in line is searched for.)
        self._shared_queue: deque[anyio.Event] = deque()
        self._alone_queue: deque[anyio.Event] = deque()

    def slot(self, tool: Tool[Any, Any], tool_input: BaseModel) -> AbstractAsyncContextManager[None]:
        """The slot for a call with this final input (`CallExecutor.execute`'s ``run_slot``)."""
        return self._shared_slot() if _safe_input(tool, tool_input) else self._alone_slot()

    def _hand_out(self) -> None:
        """Give the free slots to the waiters first in line: a call waiting to run alone once
        nothing runs (before any safe call waiting), else safe calls up to the cap."""
        if self._alone:
            return
        if self._alone_queue:
            if not self._shared:
                self._alone = True
                self._alone_queue.popleft().set()
            return
        while self._shared_queue and self._shared < self._max_shared:
            self._shared += 1
            self._shared_queue.popleft().set()

    async def _queue(self, queue: deque[anyio.Event], release: Callable[[], None]) -> None:
        """Wait in ``queue`` until `_hand_out` gives this call its slot; a call cancelled while
        waiting leaves the line, or gives back the slot it was handed at that moment."""
        granted = anyio.Event()
        queue.append(granted)
        try:
            await granted.wait()
        except BaseException:
            if granted.is_set():
                release()
            else:
                queue.remove(granted)
                self._hand_out()  # a safe call held back by this one may go now
            raise

    def _release_shared(self) -> None:
        self._shared -= 1
        self._hand_out()

    def _release_alone(self) -> None:
        self._alone = False
        self._hand_out()

    @asynccontextmanager
    async def _shared_slot(self) -> AsyncIterator[None]:
        if self._alone or self._alone_queue or self._shared_queue or self._shared >= self._max_shared:
            await self._queue(self._shared_queue, self._release_shared)
        else:
            self._shared += 1
        try:
            yield
        finally:
            self._release_shared()

    @asynccontextmanager
    async def _alone_slot(self) -> AsyncIterator[None]:
        if self._alone or self._shared or self._alone_queue:
            await self._queue(self._alone_queue, self._release_alone)
        else:
            self._alone = True
        try:
            yield
        finally:
            self._release_alone()


@dataclass
class _Entry:
    index: int
    block: ToolUseBlock
    safe: bool
    batch: int
    #: The index of the first entry of this entry's batch.
    batch_start: int
    tool: Tool[Any, Any] | None
    #: The block's input as the tool parsed it (None: it did not parse; the executor says why).
    parsed: BaseModel | None = None
    done: anyio.Event = field(default_factory=anyio.Event)
    applied: anyio.Event = field(default_factory=anyio.Event)
    started: bool = False
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    cancel_reason: str | None = None
    outcome: CallOutcome | None = None


class StreamingExecution:
    """Schedules tool_use blocks as they arrive; use as an async context manager.

    ``add()`` blocks, ``close()`` when the message is complete, iterate
    ``results()`` for envelopes in order.
    """

    def __init__(
        self, executor: CallExecutor, ctx: ToolContext, *, interrupts: InterruptWatch | None = None
    ) -> None:
        """``interrupts``: the session's watcher of ``ctx.abort`` (without one, a watcher task of
        this execution's own does the same)."""
        self.executor = executor
        self.ctx = ctx
        self._entries: list[_Entry] = []
        self._batch = 0
        self._batch_start = 0
        #: Per batch, the entries its failed calls have already cancelled up to (exclusive).
        self._cancelled_upto: dict[int, int] = {}
        self._closed = anyio.Event()
        self._added = anyio.Event()
        self._tg: TaskGroup | None = None
        self._interrupts = interrupts
        self._listening: AbstractContextManager[None] | None = None
        self._interrupt_watch = anyio.CancelScope()
        self._slots = CallSlots(max_parallel_calls())

    async def __aenter__(self) -> StreamingExecution:
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        if self._interrupts is not None:
            self._listening = self._interrupts.listening(self._interrupt)
            self._listening.__enter__()
        else:
            self._tg.start_soon(self._watch_interrupt)
        return self

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        self.close()
        assert self._tg is not None
        try:
            for entry in list(self._entries):
                await entry.applied.wait()
        except BaseException as exc:
            # Cancelled (or failed) while waiting: the task group must still be exited here, in
            # this task, or its cancel scope leaks into the caller's (anyio requires LIFO exits).
            self._stop_watching()
            self._tg.cancel_scope.cancel()
            await self._tg.__aexit__(type(exc), exc, exc.__traceback__)
            raise
        self._stop_watching()
        return await self._tg.__aexit__(*exc_info)

    def _stop_watching(self) -> None:
        if self._listening is not None:
            self._listening.__exit__(None, None, None)
            self._listening = None
        elif self._interrupts is None:
            self._interrupt_watch.cancel()

    def add(self, block: ToolUseBlock) -> None:
        """Schedule one block; safe blocks start at once when nothing unsafe precedes them."""
        if self._closed.is_set():
            raise RuntimeError("cannot add tool_use blocks after close()")
        block = checked_block(block)  # built by model_construct? (round 35)
        safe, parsed = _classify(self.executor, block)
        index = len(self._entries)
        if not safe or not self._entries or not self._entries[-1].safe:
            self._batch += 1
            self._batch_start = index
        entry = _Entry(
            index=index,
            block=block,
            safe=safe,
            batch=self._batch,
            batch_start=self._batch_start,
            tool=self.executor.registry.get(block.name),
            parsed=parsed,
        )
        self._entries.append(entry)
        added, self._added = self._added, anyio.Event()
        added.set()
        assert self._tg is not None, "use StreamingExecution as an async context manager"
        self._tg.start_soon(self._run, entry)

    def close(self) -> None:
        """No more blocks will be added."""
        self._closed.set()
        self._added.set()

    async def results(self) -> AsyncGenerator[ResultEnvelope, None]:
        """Envelopes in tool_use order, each as soon as it and all before it are done."""
        position = 0
        while True:
            if position < len(self._entries):
                entry = self._entries[position]
                await entry.applied.wait()
                assert entry.outcome is not None
                yield entry.outcome.envelope
                position += 1
                continue
            if self._closed.is_set():
                return
            await self._added.wait()

    # --- scheduling ------------------------------------------------------------
    async def _run(self, entry: _Entry) -> None:
        try:
            # ``applied`` is set strictly in tool_use order, so one entry stands for all before it:
            # a safe call waits for the last entry before its batch, any other for the one before
            # itself (a walk over every earlier entry per call made a message of n calls O(n^2)).
            before = entry.batch_start if entry.safe else entry.index
            if before > 0:
                await self._entries[before - 1].applied.wait()
            if entry.cancel_reason is not None or self.ctx.abort.is_set():
                entry.outcome = CallOutcome(
                    error_envelope(
                        entry.block.id, entry.block.name, entry.cancel_reason or NOT_RUN_INTERRUPTED
                    ),
                    entry.tool,
                )
            else:
                entry.started = True
                entry.outcome = await self._execute(entry)
            entry.outcome.envelope = sendable_envelope(entry.outcome.envelope)
            # Only a call that ran and failed cancels its siblings (not a denial or bad input).
            own_failure = entry.cancel_reason is None and entry.outcome.executed and entry.outcome.is_error
            if own_failure and entry.tool is not None and entry.tool.cancels_siblings_on_error:
                self._cancel_siblings(entry)
        finally:
            entry.done.set()
            await self._apply_in_order(entry)

    async def _execute(self, entry: _Entry) -> CallOutcome:
        ctx = self.ctx.for_call(entry.block.id)
        outcome: CallOutcome | None = None
        with entry.scope:
            outcome = await _executed(self.executor, entry.block, ctx, entry.parsed, self._slots.slot)
        if outcome is None:
            reason = entry.cancel_reason or INTERRUPTED
            outcome = CallOutcome(error_envelope(entry.block.id, entry.block.name, reason), entry.tool)
        return outcome

    def _cancel_siblings(self, failed: _Entry) -> None:
        """Cancel ``failed``'s running batch siblings. A batch's entries are adjacent; entries a
        failure already looked at are done or cancelled, so a later failure in the batch starts
        after them (each entry is looked at once per message, not once per failure)."""
        label = f"{failed.block.name} {failed.block.id}"
        start = self._cancelled_upto.get(failed.batch, failed.batch_start)
        end = start
        for end in range(start, len(self._entries)):
            other = self._entries[end]
            if other.batch != failed.batch:
                break
            if other is failed or other.done.is_set() or other.cancel_reason:
                continue
            other.cancel_reason = SIBLING_CANCELLED.format(sibling=label)
            other.scope.cancel()
        else:
            end = len(self._entries)
        self._cancelled_upto[failed.batch] = end

    async def _apply_in_order(self, entry: _Entry) -> None:
        if entry.index > 0:
            await self._entries[entry.index - 1].applied.wait()
        outcome = entry.outcome
        if outcome is not None and outcome.context_modifier is not None:
            try:
                outcome.context_modifier(self.ctx)
            except Exception as exc:  # a broken modifier must not lose the result
                self.ctx.report(entry.block.name, f"context update failed: {exc}")
        entry.applied.set()

    async def _watch_interrupt(self) -> None:
        with self._interrupt_watch:
            await self.ctx.abort.wait()
            self._interrupt()
            await anyio.sleep(math.inf)

    def _interrupt(self) -> None:
        """The user interrupted: calls not started are not run, running cancel-type calls stop."""
        for entry in self._entries:
            if entry.done.is_set():
                continue
            tool = entry.tool
            if not entry.started:
                entry.cancel_reason = NOT_RUN_INTERRUPTED
            elif tool is None or tool.interrupt_behavior == "cancel":
                entry.cancel_reason = INTERRUPTED
                entry.scope.cancel()


async def _executed(
    executor: CallExecutor,
    block: ToolUseBlock,
    ctx: ToolContext,
    parsed: BaseModel | None,
    run_slot: RunSlot | None,
) -> CallOutcome:
    """``executor.execute``, whose failure (an executor of a caller's, a subclass's own step) is
    the call's paired error result, not the end of the message: its siblings keep theirs."""
    try:
        return await executor.execute(block, ctx, parsed=parsed, run_slot=run_slot)
    except BaseException as exc:
        if not answerable(exc):
            raise
        return failed_outcome(block, executor.registry.get(block.name), exc)


async def run_single(
    executor: CallExecutor,
    ctx: ToolContext,
    block: ToolUseBlock,
    interrupts: InterruptWatch,
    run_slot: RunSlot | None = None,
) -> ResultEnvelope:
    """Run a message's only call in this task: what `StreamingExecution` does for one block
    (no batch, no order to keep, no sibling to cancel), without its task group and tasks.
    ``run_slot``: a caller's say over the final input (`CallSlots.slot` shared across messages)."""
    tool = executor.registry.get(block.name)
    # Parsed once here for the executor; not classified: a message's only call shares no batch.
    parsed = _parsed(tool, block)
    if ctx.abort.is_set():
        return sendable_envelope(error_envelope(block.id, block.name, NOT_RUN_INTERRUPTED))
    scope = anyio.CancelScope()
    reason: list[str] = []

    def interrupted() -> None:
        if not reason and (tool is None or tool.interrupt_behavior == "cancel"):
            reason.append(INTERRUPTED)
            scope.cancel()

    outcome: CallOutcome | None = None
    with interrupts.listening(interrupted), scope:
        outcome = await _executed(executor, block, ctx.for_call(block.id), parsed, run_slot)
    if outcome is None:
        return sendable_envelope(error_envelope(block.id, block.name, reason[0] if reason else INTERRUPTED))
    if outcome.context_modifier is not None:
        try:
            outcome.context_modifier(ctx)
        except Exception as exc:  # a broken modifier must not lose the result
            ctx.report(block.name, f"context update failed: {exc}")
    return sendable_envelope(outcome.envelope)


async def run_blocks(
    executor: CallExecutor,
    ctx: ToolContext,
    blocks: Sequence[ToolUseBlock],
    *,
    on_result: Callable[[ResultEnvelope], Awaitable[None]] | None = None,
) -> list[ResultEnvelope]:
    """Run all blocks of one assistant message; results in tool_use order."""
    results: list[ResultEnvelope] = []
    async with StreamingExecution(executor, ctx) as stream:
        for block in blocks:
            stream.add(block)
        stream.close()
        async for envelope in stream.results():
            results.append(envelope)
            if on_result is not None:
                await on_result(envelope)
    return results
