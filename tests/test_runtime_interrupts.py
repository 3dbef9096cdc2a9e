"""Interrupts through a whole Runtime: one session watcher serves every message (single-call and batched)."""

from __future__ import annotations

import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import anyio
import pytest

import shellrt
from shellrt.protocol import PermissionResult, ToolContext, ToolOutput
from tests._runtime_tools import SafeSleep, SleepInput, Span, UnsafeSleep

pytestmark = pytest.mark.anyio

#: Set by the first sleep tool call of a test (its own, made in the test's event loop): an interrupt
#: timed from the message's start (0.1-0.2 s) could land, on a loaded lane, before the call began
#: ("before this call started"), which is another path than the one each test is about.
_STARTED: list[anyio.Event] = []


async def _note_start() -> None:
    if _STARTED:
        _STARTED[0].set()


class _Safe(SafeSleep):
    async def call(self, tool_input: SleepInput, ctx: ToolContext) -> ToolOutput[Span]:
        await _note_start()
        return await super().call(tool_input, ctx)


class _Unsafe(UnsafeSleep):
    async def call(self, tool_input: SleepInput, ctx: ToolContext) -> ToolOutput[Span]:
        await _note_start()
        return await super().call(tool_input, ctx)


class BlockingSleep(_Unsafe):
    """Finishes its work even when the user interrupts (interrupt_behavior "block")."""

    name = "BlockingSleep"
    interrupt_behavior = "block"  # type: ignore[assignment]  # _SleepBase narrows it to "cancel"

    async def check_permissions(self, tool_input: SleepInput, ctx: ToolContext) -> PermissionResult:
        return PermissionResult.allow("test tool")


_ids = iter(range(1_000_000))


def use(name: str, seconds: float) -> dict[str, Any]:
    return {"type": "tool_use", "id": f"toolu_int_{next(_ids)}", "name": name, "input": {"seconds": seconds}}


def text(block: dict[str, Any]) -> str:
    content = block["content"]
    return content if isinstance(content, str) else "".join(part["text"] for part in content)


def runtime(tmp_path: Path) -> shellrt.Runtime:
    return shellrt.Runtime(
        workspace=tmp_path,
        sandbox="local",
        session_dir=tmp_path / ".s",
        tools=[_Safe(), _Unsafe(), BlockingSleep()],
        use_settings=False,
    )


def interrupt_after(rt: shellrt.Runtime, seconds: float) -> Callable[[], Coroutine[Any, Any, None]]:
    """Interrupt ``seconds`` after the next call began (waited for, up to 30 s); armed at once,
    before the message that makes the call is sent."""
    started = anyio.Event()
    _STARTED[:] = [started]

    async def interrupt() -> None:
        with anyio.fail_after(30):
            await started.wait()
        await anyio.sleep(seconds)
        rt.interrupt()

    return interrupt


async def test_a_single_running_call_is_interrupted_and_the_next_messages_still_can_be(
    tmp_path: Path,
) -> None:
    async with runtime(tmp_path) as rt:
        for _ in range(2):  # the second round needs the watcher to follow the fresh abort event
            async with anyio.create_task_group() as tg:
                tg.start_soon(interrupt_after(rt, 0.2))
                start = time.monotonic()
                reply = await rt.run({"role": "assistant", "content": [use("UnsafeSleep", 10)]})
            # Ended by the interrupt, not the 10 s sleep (the most SleepInput takes): ~0.3 s idle;
            # 8 s is over 10x that (3 s was too near it on a loaded lane).
            assert time.monotonic() - start < 8
            block = reply["content"][0]
            assert block["is_error"] and "Interrupted by the user" in text(block)
        calm = await rt.run({"role": "assistant", "content": [use("UnsafeSleep", 0)]})
        assert not calm["content"][0]["is_error"]


async def test_a_block_type_call_finishes_despite_an_interrupt(tmp_path: Path) -> None:
    async with runtime(tmp_path) as rt, anyio.create_task_group() as tg:
        tg.start_soon(interrupt_after(rt, 0.1))
        reply = await rt.run({"role": "assistant", "content": [use("BlockingSleep", 0.5)]})
    assert not reply["content"][0]["is_error"]


async def test_a_batch_is_interrupted_and_unstarted_calls_are_not_run(tmp_path: Path) -> None:
    async with runtime(tmp_path) as rt:
        async with anyio.create_task_group() as tg:
            tg.start_soon(interrupt_after(rt, 0.2))
            reply = await rt.run(
                {"role": "assistant", "content": [use("SafeSleep", 5), use("UnsafeSleep", 5)]}
            )
        texts = [text(b) for b in reply["content"]]
        assert "Interrupted by the user" in texts[0] and "before this call started" in texts[1]


async def test_a_message_interrupted_before_it_started_runs_nothing(tmp_path: Path) -> None:
    async with runtime(tmp_path) as rt:
        reply = await rt.run({"role": "assistant", "content": [use("UnsafeSleep", 0)]}, interrupted=True)
        assert "before this call started" in text(reply["content"][0])
        reply = await rt.run({"role": "assistant", "content": [use("UnsafeSleep", 0)]})
        assert not reply["content"][0]["is_error"]


async def test_an_abort_event_replaced_from_outside_is_followed(tmp_path: Path) -> None:
    async with runtime(tmp_path) as rt:
        rt.interrupt()  # nothing running: the watcher handles it and waits for a fresh event
        await anyio.sleep(0.05)
        rt.context.abort = anyio.Event()  # replaced by someone other than the session
        async with anyio.create_task_group() as tg:
            tg.start_soon(interrupt_after(rt, 0.2))
            reply = await rt.run({"role": "assistant", "content": [use("UnsafeSleep", 5)]})
        assert "Interrupted by the user" in text(reply["content"][0])
