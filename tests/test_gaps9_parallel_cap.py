"""Round 8's open gap: every concurrency-safe call of one message started at once.

600 read-only calls in one message ran together (the sandbox's pids limit and the fd table
were the only bound). They are now capped (``SHELLRT_MAX_PARALLEL_CALLS``, default 10, as
Claude Code caps); the rest queue and all are answered. Real processes: the test counts the
``sleep`` processes of the message running at once, on the runtime and over MCP (stdio).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

import anyio
import pytest

import shellrt
from tests._mcp_support import serve_session, text_of

pytestmark = pytest.mark.anyio


def _sleeps(tag: str) -> int:
    """How many ``sleep 1.<tag>…`` processes run now."""
    count = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            count += len(argv) > 1 and argv[0].endswith(b"sleep") and argv[1].startswith(f"1.{tag}".encode())
    return count


async def _watch(tag: str, peak: list[int], stop: anyio.Event) -> None:
    while not stop.is_set():
        peak[0] = max(peak[0], _sleeps(tag))
        await anyio.sleep(0.02)


def test_the_cap_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from shellrt.runtime.orchestration import MAX_PARALLEL_CALLS, max_parallel_calls

    monkeypatch.delenv("SHELLRT_MAX_PARALLEL_CALLS", raising=False)
    assert max_parallel_calls() == MAX_PARALLEL_CALLS == 10
    monkeypatch.setenv("SHELLRT_MAX_PARALLEL_CALLS", "3")
    assert max_parallel_calls() == 3
    monkeypatch.setenv("SHELLRT_MAX_PARALLEL_CALLS", "0")
    with pytest.raises(ValueError, match="at least 1"):
        max_parallel_calls()


async def test_one_messages_safe_calls_queue_past_the_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHELLRT_MAX_PARALLEL_CALLS", "3")
    tag = str(secrets.randbelow(10**6)).zfill(6)
    blocks: list[dict[str, Any]] = [
        {
            "type": "tool_use",
            "id": f"cap-{tag}-{i}",
            "name": "Bash",
            "input": {"command": f"sleep 1.{tag}{i}"},
        }
        for i in range(8)
    ]
    peak, stop = [0], anyio.Event()
    async with (
        shellrt.Runtime(workspace=tmp_path, sandbox="local", session_dir=tmp_path / ".s") as rt,
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(_watch, tag, peak, stop)
        user = await rt.run(blocks)
        stop.set()
    results = user["content"]
    assert len(results) == 8 and not any(r.get("is_error") for r in results), results
    assert 2 <= peak[0] <= 3, peak


async def test_an_mcp_clients_safe_requests_queue_past_the_cap(tmp_path: Path) -> None:
    tag = str(secrets.randbelow(10**6)).zfill(6)
    peak, stop = [0], anyio.Event()
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    home.mkdir()
    async with serve_session(ws, home) as session:  # the default cap, 10
        answers: list[str] = []

        async def one(i: int) -> None:
            result = await session.call_tool("Bash", {"command": f"sleep 1.{tag}{i}"})
            answers.append(text_of(result) if not result.is_error else "error")

        async with anyio.create_task_group() as tg:
            tg.start_soon(_watch, tag, peak, stop)
            async with anyio.create_task_group() as calls:
                for i in range(13):
                    calls.start_soon(one, i)
            stop.set()
    assert len(answers) == 13 and "error" not in answers, answers
    assert peak[0] == 10, peak
