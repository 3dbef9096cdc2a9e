"""Red team round 35 (iface): a background task belongs to the MCP session whose call started it.

Round 12 made a task of one HTTP session unreachable from another, but a task's owner was guessed:
every task that appeared while a call ran was credited to the calling session. A slow call of
session A (a read-only ``sleep`` runs alongside others) was credited with the task session B
started meanwhile, so A could stop and read B's task, and A's session ending killed it.
"""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests._serve_cli import start_http_serve
from tests.test_mcp_server import _free_port, _wait_for_port
from tests.test_server_jsonl import marker_pids

_TOKEN = "round35-task-owner-token-0123456789"


def _text(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


def test_a_concurrent_call_does_not_take_another_sessions_task(tmp_path: Path) -> None:
    """Failed before: A's TaskOutput read B's task (B's output reached A) while A's slow call overlapped."""
    port = _free_port()
    marker = f"r35-owner-{time.time_ns()}"
    server = start_http_serve(tmp_path, port, _TOKEN)
    seen: dict[str, str] = {}

    async def scenario() -> None:
        await _wait_for_port(port)
        url = f"http://127.0.0.1:{port}/mcp"
        headers = {"Authorization": f"Bearer {_TOKEN}"}
        async with (
            create_mcp_http_client(headers=headers) as http_b,
            streamable_http_client(url, http_client=http_b) as (read_b, write_b),
            ClientSession(read_b, write_b) as b,
        ):
            await b.initialize()
            async with (
                create_mcp_http_client(headers=headers) as http_a,
                streamable_http_client(url, http_client=http_a) as (read_a, write_a),
                ClientSession(read_a, write_a) as a,
            ):
                await a.initialize()
                task_id = ""

                async def slow_a() -> None:
                    seen["slow"] = _text(await a.call_tool("Bash", {"command": "sleep 1.5"}))

                async with anyio.create_task_group() as tg:
                    tg.start_soon(slow_a)
                    await anyio.sleep(0.3)
                    started = await b.call_tool(
                        "Bash", {"command": f"echo secret-b; sleep 1000 # {marker}", "run_in_background": True}
                    )
                    found = re.search(r"task id (\w+)", _text(started))
                    assert found, _text(started)
                    task_id = found.group(1)
                await anyio.sleep(0.3)
                for name in ("TaskOutput", "TaskStop"):
                    other = await a.call_tool(name, {"task_id": task_id})
                    seen[name] = _text(other)
                    assert other.is_error and "another MCP session" in seen[name], (name, seen[name])
                assert marker_pids(marker), "session A stopped session B's task"
            # A's session ended (DELETE): B's task must live on.
            await anyio.sleep(2.5)
            assert marker_pids(marker), "session A's end killed session B's task"
            own = await b.call_tool("TaskOutput", {"task_id": task_id})
            assert not own.is_error and "secret-b" in _text(own), _text(own)
            assert not (await b.call_tool("TaskStop", {"task_id": task_id})).is_error

    try:
        anyio.run(scenario)
    finally:
        server.terminate()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
    assert not marker_pids(marker)
