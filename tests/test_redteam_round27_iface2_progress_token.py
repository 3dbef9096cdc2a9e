"""Round 27 wave 2, interfaces: a ``progressToken`` of ``true`` was taken as the token ``1``.

The SDK's pydantic model reads ``_meta.progressToken`` in lax mode, so ``true`` became ``1``
(``false`` ``0``): the client's progress went out under a token it may have given another call,
while an object, a float or null were refused. A token names a call as an id does, so both MCP
wires now hold it to an id's types (a string or an integer) and refuse the request ``-32602``
under its own id, before anything runs. The stdio wire on real pipes; the HTTP body check as
ASGI middleware in front of an app that records what reached it.
"""

from __future__ import annotations

import json
import os
from typing import Any

import anyio
import pytest

from shellrt.server._http_strict import StrictJsonBodyMiddleware
from shellrt.server._mcp_stdio import StdioWire
from tests._asgi_post import RecordingApp, post

pytestmark = pytest.mark.anyio


def _call(msg_id: int, token: Any) -> bytes:
    params = {"name": "Bash", "arguments": {"command": "true"}, "_meta": {"progressToken": token}}
    return json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": "tools/call", "params": params}).encode()


async def test_the_stdio_wire_refuses_a_boolean_progress_token() -> None:
    client_out, server_in = os.pipe()
    server_out, client_in = os.pipe()
    wire = StdioWire(client_out, client_in)
    send, receive = anyio.create_memory_object_stream[Any](10)
    answers = os.fdopen(server_out, "rb")
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(wire.reader, send)
            with anyio.fail_after(20):
                for msg_id, token in ((7, True), (8, False)):
                    os.write(server_in, _call(msg_id, token) + b"\n")
                    got = json.loads(await anyio.to_thread.run_sync(answers.readline, abandon_on_cancel=True))
                    assert got["id"] == msg_id and got["error"]["code"] == -32602, got
                    assert "progressToken" in got["error"]["message"], got
                os.write(server_in, _call(9, "tok") + b"\n")  # a string token reaches the session
                forwarded = await receive.receive()
                assert forwarded.message.id == 9, forwarded
            tg.cancel_scope.cancel()
    finally:
        for fd in (client_in, server_in, client_out):
            os.close(fd)
        answers.close()


async def test_the_http_body_check_refuses_a_boolean_progress_token() -> None:
    app = RecordingApp()
    middleware = StrictJsonBodyMiddleware(app, body_timeout=5)
    for msg_id, token in ((7, True), (8, 3)):
        sent = await post(middleware, _call(msg_id, token), [(b"mcp-session-id", b"s1")])
        if token is True:
            assert sent[0]["status"] == 400 and not app.reached, sent
            got = json.loads(sent[1]["body"])
            assert got["id"] == 7 and got["error"]["code"] == -32602, got
        else:
            assert sent[0]["status"] == 200 and len(app.reached) == 1, sent
