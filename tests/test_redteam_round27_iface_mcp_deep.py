"""Round 27, interfaces: an MCP request nested too deeply to read was answered under id null.

``{"id": "deep", "method": "tools/call", "params": {… 100,000 arrays deep …}}`` is valid JSON;
Python's reader gives up on it (`RecursionError`) and the stdio wire answered "Parse error" with
id null, so the client waited forever for an answer under its own id (round 25 fixed the same
for a number too long to read). The top-level id is now found without descending into the
params (`shellrt.server._shallow_id`): the request is refused under it, a notification is not
answered, and the wire goes on. The stdio wire of ``shellrt serve`` on real pipes.
"""

from __future__ import annotations

import json
import os
from typing import Any

import anyio
import pytest

from shellrt.server._mcp_stdio import StdioWire

pytestmark = pytest.mark.anyio

_DEEP = b"[" * 100_000 + b"]" * 100_000


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


async def test_a_deeply_nested_request_is_refused_under_its_own_id() -> None:
    client_out, server_in = os.pipe()
    server_out, client_in = os.pipe()
    wire = StdioWire(client_out, client_in)
    send, receive = anyio.create_memory_object_stream[Any](10)
    answers = os.fdopen(server_out, "rb")

    async def write(data: bytes) -> None:  # from a thread: a pipe holds 64 KB, the reader runs here
        await anyio.to_thread.run_sync(_write_all, server_in, data)

    def answer() -> dict[str, Any]:
        line = answers.readline()
        assert line, "the wire closed"
        value: dict[str, Any] = json.loads(line)
        return value

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(wire.reader, send)
            with anyio.fail_after(30):
                await write(b'{"jsonrpc":"2.0","id":"deep","method":"tools/call","params":{"name":"Bash","arguments":'
                    b'{"command":"echo hi","x":' + _DEEP + b',"y":"]}\\""}}}\n',
                )
                got = await anyio.to_thread.run_sync(answer, abandon_on_cancel=True)
                assert got["id"] == "deep" and got["error"]["code"] == -32600, got
                assert "nested too deeply" in got["error"]["message"], got
                await write(b'{"jsonrpc":"2.0","params":' + _DEEP + b',"id":41,"method":"ping"}\n')
                got = await anyio.to_thread.run_sync(answer, abandon_on_cancel=True)
                assert got["id"] == 41 and got["error"]["code"] == -32600, got
                # A notification gets no answer; the next request reaches the session.
                await write(b'{"jsonrpc":"2.0","method":"notifications/progress","params":' + _DEEP + b"}\n")
                await write(b'{"jsonrpc":"2.0","id":42,"method":"ping"}\n')
                forwarded = await receive.receive()
                assert forwarded.message.id == 42, forwarded
                # Not JSON at all is still a parse error with id null.
                await write(b'{"jsonrpc":"2.0","id":43,"params":' + b"[" * 100_000 + b"\n")
                got = await anyio.to_thread.run_sync(answer, abandon_on_cancel=True)
                assert got["id"] is None and got["error"]["code"] == -32700, got
            tg.cancel_scope.cancel()
    finally:
        for fd in (client_in, server_in, client_out):  # the write end first: a waiting read sees EOF
            os.close(fd)
        answers.close()
