"""Red team round 12 (protocol): one MCP client cannot read or stop another client's background task.

Over streamable HTTP, background tasks started by a client's calls belong to its MCP session
(docs/faults.md: they are stopped when that session ends). Yet any other session of the same
server could stop them (TaskStop) or consume their output (TaskOutput: what it read is gone for
the owner), and the ids to use were handed out by the "unknown id" error, which listed every task
of the server. Now a task id of another live MCP session is refused with what to do, and an unknown
id is answered with the ids of the caller's own session only.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests._mcp_http_sessions import served
from tests.test_mcp_server import _wait_for_port
from tests.test_server_jsonl import marker_pids

_TOKEN = "round12-sessions-token-0123456789"


def _text(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


def test_another_sessions_task_cannot_be_stopped_or_read(tmp_path: Path) -> None:
    """Failed on the old code: session B's TaskStop killed session A's task, and B's call with a
    bogus id listed A's task id."""
    marker = f"r12-mcp-owner-{time.time_ns()}"
    seen: dict[str, str] = {}

    async def scenario(port: int) -> None:
        await _wait_for_port(port)
        url = f"http://127.0.0.1:{port}/mcp"
        headers = {"Authorization": f"Bearer {_TOKEN}"}
        async with (
            create_mcp_http_client(headers=headers) as http_a,
            streamable_http_client(url, http_client=http_a) as (read_a, write_a),
            ClientSession(read_a, write_a) as a,
            create_mcp_http_client(headers=headers) as http_b,
            streamable_http_client(url, http_client=http_b) as (read_b, write_b),
            ClientSession(read_b, write_b) as b,
        ):
            await a.initialize()
            await b.initialize()
            started = await a.call_tool(
                "Bash", {"command": f"echo secret-a; sleep 1000 # {marker}", "run_in_background": True}
            )
            found = re.search(r"task id (\w+)", _text(started))
            assert found, _text(started)
            task_id = found.group(1)
            await anyio.sleep(0.5)
            for name in ("TaskStop", "KillShell", "TaskOutput", "BashOutput"):
                other = await b.call_tool(name, {"task_id": task_id})
                seen[name] = _text(other)
                assert other.is_error, (name, seen[name])
                assert "another MCP session" in seen[name], seen[name]
            assert marker_pids(marker), "session B stopped session A's task"
            bogus = await b.call_tool("TaskOutput", {"task_id": "nosuch"})
            assert bogus.is_error and task_id not in _text(bogus), _text(bogus)
            own = await a.call_tool("TaskOutput", {"task_id": task_id})
            assert not own.is_error and "secret-a" in _text(own), _text(own)
            b_task = await b.call_tool("Bash", {"command": "sleep 1000 # b", "run_in_background": True})
            b_id = re.search(r"task id (\w+)", _text(b_task))
            assert b_id
            assert not (await b.call_tool("TaskStop", {"task_id": b_id.group(1)})).is_error
            assert not (await a.call_tool("TaskStop", {"task_id": task_id})).is_error

    with served(tmp_path, _TOKEN) as port:
        anyio.run(scenario, port)
    assert not marker_pids(marker)
