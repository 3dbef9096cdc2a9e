"""Red team round 44 (iface4): the request bodies ``serve --http`` holds at once are bounded.

Each body was bounded (~24 MiB) and each peer's connections (64), not their sum: a body stayed in
memory from its first byte until its request ended -- three times over (the pieces read, the joined
body, the parsed copy, all referenced by the middleware's frame while the call ran or waited for
its turn). One token holder's 16 bodies behind a running command took the server holding every
session to 565-625 MB. Now a large body is admitted only within a server-wide budget (503 past it,
small bodies always), and the middleware keeps no copy while the app runs. The real middleware,
driven as uvicorn drives it (64 KiB pieces), with a gated app standing for a queued call.
"""

from __future__ import annotations

import gc
import json
import tracemalloc
from typing import Any

import anyio
import pytest

from shellrt.server._http_strict import MAX_BODY_BYTES, StrictJsonBodyMiddleware

pytestmark = pytest.mark.anyio

MiB = 1024 * 1024
_PIECE = 64 * 1024


def _large_call(msg_id: int) -> bytes:
    """The largest call the wires take: a Write of 4 Mi - 4 Ki characters, each sent escaped."""
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": msg_id,
            "method": "tools/call",
            "params": {"name": "Write", "arguments": {"file_path": "x", "content": "\u00e9" * (4 * MiB - 4096)}},
        }
    ).encode()
    assert 23 * MiB < len(body) <= MAX_BODY_BYTES
    return body


def _small_call(msg_id: int) -> bytes:
    return json.dumps(
        {"jsonrpc": "2.0", "id": msg_id, "method": "tools/call", "params": {"name": "Bash", "arguments": {"command": "ls"}}}
    ).encode()


class _QueuedCalls:
    """The app behind the middleware: reads the body, then waits (a call queued behind another)."""

    def __init__(self) -> None:
        self.release = anyio.Event()
        self.arrived = 0
        self.changed = anyio.Event()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        size, more = 0, True
        while more:
            message = await receive()
            size += len(message.get("body", b""))
            more = bool(message.get("more_body", False))
            del message  # read, not kept (as the SDK keeps the parsed request, not this event)
        self.arrived += 1
        self.changed.set()
        await self.release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": str(size).encode()})

    async def wait_for(self, count: int) -> None:
        while self.arrived < count:
            self.changed = anyio.Event()
            await self.changed.wait()


def _pieces(body: bytes) -> list[bytes]:
    return [body[i : i + _PIECE] for i in range(0, len(body), _PIECE)] or [b""]


async def _post(
    middleware: StrictJsonBodyMiddleware, body: bytes | list[bytes], key: str, answers: list[tuple[int, bytes]]
) -> None:
    pieces = _pieces(body) if isinstance(body, bytes) else body
    index = 0

    async def receive() -> dict[str, Any]:
        nonlocal index
        if index < len(pieces):
            index += 1
            return {"type": "http.request", "body": pieces[index - 1], "more_body": index < len(pieces)}
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    status = [0]

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            status[0] = message["status"]
        elif message["type"] == "http.response.body":
            answers.append((status[0], bytes(message.get("body", b""))))

    scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": [(b"mcp-session-id", key.encode())]}
    await middleware(scope, receive, send)


async def test_large_bodies_past_the_servers_budget_are_refused_and_small_ones_still_pass() -> None:
    """Failed before: all six ~24 MiB bodies were held at once (150 MB for one client)."""
    app = _QueuedCalls()
    middleware = StrictJsonBodyMiddleware(app, body_timeout=120)
    answers: list[tuple[int, bytes]] = []
    async with anyio.create_task_group() as tg:
        for n in range(6):
            tg.start_soon(_post, middleware, _large_call(n), f"s{n}", answers)
        with anyio.fail_after(120):
            while len(answers) + app.arrived < 6:  # each one refused (answered) or waiting in the app
                await anyio.sleep(0.05)
        refused = list(answers)
        arrived = app.arrived
        if arrived < 6:
            tg.start_soon(_post, middleware, _small_call(99), "small", answers)  # always admitted
            with anyio.fail_after(30):
                await app.wait_for(arrived + 1)
        app.release.set()
    assert arrived == 4, f"{arrived} of 6 large bodies held at once"
    assert len(refused) == 2 and all(status == 503 for status, _ in refused), refused
    message = json.loads(refused[0][1])["error"]["message"]
    assert "Server busy" in message and "Send it again" in message and "at most 100,925,440" in message, message
    assert app.arrived == 5  # the small call was admitted with the budget full
    # Freed when the requests ended: a large body is taken again.
    again = _QueuedCalls()
    again.release.set()
    middleware._app = again
    late: list[tuple[int, bytes]] = []
    await _post(middleware, _large_call(7), "late", late)
    assert late and late[0][0] == 200, late


async def test_a_waiting_request_holds_no_copy_of_its_body_in_the_middleware() -> None:
    """Failed before: ~50 MB more stayed referenced (the pieces, the joined body, the parsed copy)."""
    app = _QueuedCalls()
    middleware = StrictJsonBodyMiddleware(app, body_timeout=120)
    pieces = _pieces(_large_call(1))  # made before tracing: the test's own copy is not counted
    answers: list[tuple[int, bytes]] = []
    gc.collect()
    tracemalloc.start()
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_post, middleware, pieces, "s", answers)
            with anyio.fail_after(120):
                await app.wait_for(1)
            gc.collect()
            waiting, _peak = tracemalloc.get_traced_memory()
            app.release.set()
    finally:
        tracemalloc.stop()
    # What is traced now (the test's pieces were made before) is what the middleware holds.
    assert waiting < 8 * MiB, f"{waiting:,} bytes held while the request waits"
    assert answers and answers[0][0] == 200, answers
