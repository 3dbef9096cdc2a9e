"""Red team round 35 (iface): a background task belongs to the MCP session whose call started it.

Round 12 made a task of one HTTP session unreachable from another, but a task's owner was guessed:
every task that appeared while a call ran was credited to the calling session. A slow call of
session A (a read-only ``sleep`` runs alongside others) was credited with the task session B
started meanwhile, so A could stop and read B's task, and A's session ending killed it.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import anyio

from tests._mcp_http_sessions import http_session, served, text_of
from tests.test_server_jsonl import marker_pids

_TOKEN = "round35-task-owner-token-0123456789"


def test_a_concurrent_call_does_not_take_another_sessions_task(tmp_path: Path) -> None:
    """Failed before: A's TaskOutput read B's task (B's output reached A) while A's slow call overlapped."""
    marker = f"r35-owner-{time.time_ns()}"

    async def scenario(port: int) -> None:
        async with http_session(port, _TOKEN) as b:
            async with http_session(port, _TOKEN) as a:
                task_id = ""

                async def slow_a() -> None:
                    await a.call_tool("Bash", {"command": "sleep 1.5"})

                async with anyio.create_task_group() as tg:
                    tg.start_soon(slow_a)
                    await anyio.sleep(0.3)
                    command = f"echo secret-b; sleep 1000 # {marker}"
                    started = await b.call_tool("Bash", {"command": command, "run_in_background": True})
                    found = re.search(r"task id (\w+)", text_of(started))
                    assert found, text_of(started)
                    task_id = found.group(1)
                await anyio.sleep(0.3)
                for name in ("TaskOutput", "TaskStop"):
                    other = await a.call_tool(name, {"task_id": task_id})
                    assert other.is_error and "another MCP session" in text_of(other), (name, text_of(other))
                assert marker_pids(marker), "session A stopped session B's task"
            # A's session ended (DELETE): B's task must live on.
            await anyio.sleep(1.5)  # the sweep runs every second
            assert marker_pids(marker), "session A's end killed session B's task"
            own = await b.call_tool("TaskOutput", {"task_id": task_id})
            assert not own.is_error and "secret-b" in text_of(own), text_of(own)
            assert not (await b.call_tool("TaskStop", {"task_id": task_id})).is_error

    with served(tmp_path, _TOKEN) as port:
        anyio.run(scenario, port)
    assert not marker_pids(marker)
