"""Round 8's open gap: MCP over HTTP read a body with a repeated key as its last key said.

The stdio wires refuse JSON that readers disagree on (a repeated key, NaN); MCP over HTTP was
parsed by the SDK alone, which keeps the last key. A real ``shellrt serve --http`` process and
raw POSTs, as a guard or proxy in front of it would pass them: a ``tools/call`` whose first
``command`` is harmless and whose second touches a file.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

from tests.test_mcp_http_auth import TOKEN, served

_AUTH = {"Authorization": f"Bearer {TOKEN}"}


def _post(url: str, raw: str, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(
        url,
        data=raw.encode(),
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **headers,
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, {k.lower(): v for k, v in exc.headers.items()}, exc.read()


def _session(url: str) -> dict[str, str]:
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "x", "version": "1"},
        },
    }
    status, headers, reply = _post(url, json.dumps(init), _AUTH)
    assert status == 200, reply
    session = {**_AUTH, "Mcp-Session-Id": headers["mcp-session-id"], "MCP-Protocol-Version": "2025-06-18"}
    status, _, reply = _post(
        url, json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}), session
    )
    assert status in (200, 202), reply
    return session


def test_a_body_with_a_repeated_key_is_refused_and_nothing_runs(tmp_path: Path) -> None:
    with served(tmp_path, env={"SHELLRT_SERVE_TOKEN": TOKEN}) as srv:
        session = _session(srv.url)
        pwned = tmp_path / "ws" / "pwned"
        call = (
            '{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "Bash", "arguments": '
            '{"command": "echo ok", "command": "touch pwned", "description": "d"}}}'
        )
        status, _, reply = _post(srv.url, call, session)
        assert status == 400, (status, reply)
        answer = json.loads(reply)
        assert answer["id"] == 7 and answer["error"]["code"] == -32600, answer
        assert "'command' appears twice" in answer["error"]["message"], answer
        nan = call.replace('"command": "echo ok", ', '"timeout": NaN, ')
        assert _post(srv.url, nan, session)[0] == 400
        assert not pwned.exists(), "a body readers disagree on ran its last key"
        # The same session still runs a plain call (the refusals were the parser's doing).
        plain = call.replace('"command": "echo ok", ', "")
        status, _, reply = _post(srv.url, plain, session)
        assert status == 200 and pwned.exists(), reply


def test_the_middleware_passes_good_bodies_whole_and_refuses_oversized_ones() -> None:
    """The ASGI layer alone: a body in pieces reaches the app whole, then the client's own events."""
    import anyio

    from shellrt.server import _http_strict
    from shellrt.server._http_strict import StrictJsonBodyMiddleware

    seen: list[bytes] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        first = await receive()
        seen.append(first["body"])
        seen.append((await receive())["type"].encode())
        await send({"type": "http.response.start", "status": 200, "headers": []})

    async def run(pieces: list[bytes]) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = [
            {"type": "http.request", "body": p, "more_body": i < len(pieces) - 1}
            for i, p in enumerate(pieces)
        ]
        events.append({"type": "http.disconnect"})
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return events.pop(0)

        async def send(message: MutableMapping[str, Any]) -> None:
            sent.append(dict(message))

        await StrictJsonBodyMiddleware(app)({"type": "http", "method": "POST"}, receive, send)
        return sent

    sent = anyio.run(run, [b'{"jsonrpc": "2.0", ', b'"id": 1, "method": "ping"}'])
    assert seen == [b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}', b"http.disconnect"]
    assert sent[0]["status"] == 200
    limit, _http_strict.MAX_BODY_BYTES = _http_strict.MAX_BODY_BYTES, 10
    try:
        sent = anyio.run(run, [b'{"id": 1, ', b'"method": "ping"}'])
    finally:
        _http_strict.MAX_BODY_BYTES = limit
    assert sent[0]["status"] == 413 and len(seen) == 2
