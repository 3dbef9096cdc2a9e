"""MCP over HTTP reads request bodies as the stdio wires read lines: one meaning or refused.

The SDK parses a POST body with pydantic, which keeps the last of two equal keys and accepts
``NaN``: a proxy or guard in front of ``shellrt serve --http`` that judged
``{"command": "echo ok", "command": "touch pwned"}`` by its first key let shellrt run the
second. Each JSON POST body is read whole here (at most `MAX_BODY_BYTES`) and checked with the
stdio wires' parser (`strict_loads`); a body readers would disagree on gets ``400`` and a
JSON-RPC ``-32600`` naming the key, and nothing runs. So does a request whose id is not a
string or an integer, which the SDK took for a notification and answered ``202`` with nothing,
and one reusing, within its MCP session, the id of a request whose POST is still open (the SDK
let it take the running call's cancel: `_request_ids`, round 25). Other bodies go on unchanged (the SDK answers malformed JSON itself).

The body must arrive within ``body_timeout`` seconds of its headers (``408`` otherwise, and the
connection closes): the header deadline (`shellrt.server._http_guard`) stops at the headers, and
a request in flight is never closed to admit another client, so a client that sent headers and
then a byte now and then held its connection slot for as long as it liked (red team, round 14).
The bytes of bodies held at once, over every connection, are bounded too (`_http_body_budget`),
and a body is held once: the pieces read and the parsed copy are dropped before the app runs.
"""

from __future__ import annotations

import json
import math
from typing import Any

import anyio

from shellrt.server._http_auth import AsgiApp, Message, Receive, Scope, Send
from shellrt.server._http_body_budget import BodyBudget
from shellrt.server._http_values import too_many_values
from shellrt.server._json_depth import MAX_DEPTH, too_deep
from shellrt.server._line_budget import over_budget, parse_off_loop
from shellrt.server._request_ids import (
    InFlight,
    bad_id_reason,
    bad_token_reason,
    is_plain_id,
    lenient_loads,
)
from shellrt.server._shallow_id import leading_id, top_level_scalars
from shellrt.server._strict_json import StrictJsonError, strict_loads
from shellrt.server._wire_chars import MAX_MESSAGE_BYTES, too_many_chars

__all__ = ["BODY_TIMEOUT_FACTOR", "MAX_BODY_BYTES", "StrictJsonBodyMiddleware"]

#: Largest body read (the stdio wires' line limit); a larger one gets 413 before the app sees it.
#: One MCP message at its longest (one tool input, every character escaped; round 40: was 64 MiB).
MAX_BODY_BYTES = MAX_MESSAGE_BYTES
_INVALID_REQUEST = -32600
_INVALID_PARAMS = -32602
_PARSE_ERROR = -32700
#: A body's deadline, in header deadlines (30 s by default: 64 MiB needs 2.2 MB/s).
BODY_TIMEOUT_FACTOR = 3


class StrictJsonBodyMiddleware:
    """ASGI middleware: POST bodies holding a repeated key, NaN/Infinity or an unreadable number are refused."""

    def __init__(self, app: AsgiApp, *, body_timeout: float = math.inf, budget: BodyBudget | None = None) -> None:
        self._app = app
        self._body_timeout = body_timeout
        #: Bytes of bodies held by requests in flight, over every connection (round 44).
        self._budget = BodyBudget() if budget is None else budget
        #: Per ``Mcp-Session-Id``: ids of requests whose POST is open (dropped when none is).
        self._in_flight: dict[str, InFlight] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http" or scope.get("method") != "POST":
            await self._app(scope, receive, send)
            return
        held = [0]  # bytes this request counts against the server's body budget
        try:
            await self._checked(scope, receive, send, held)
        finally:
            self._budget.give_back(held[0])

    async def _checked(self, scope: Scope, receive: Receive, send: Send, held: list[int]) -> None:
        """Read the body within the budget, check it, hand it on (``held``: the bytes counted)."""
        chunks: list[bytes] = []
        body: bytes | None = None
        with anyio.move_on_after(self._body_timeout):
            size = 0
            while True:
                message = await receive()
                if message["type"] != "http.request":  # the client went away before sending it all
                    return
                chunk = bytes(message.get("body", b""))
                size += len(chunk)
                if size > MAX_BODY_BYTES:
                    await _answer(
                        send, 413, None, f"the request body is over {MAX_BODY_BYTES:,} bytes (one tool input of 4 Mi characters at "
                        "most); send less at once: write a large file in parts (Write, then Edit)"
                    )
                    return
                if not self._budget.take(held[0], len(chunk)):
                    chunks.clear()
                    await _answer(send, 503, None, f"Server busy: {self._budget.refusal()}", close=True)
                    return
                held[0] += len(chunk)
                chunks.append(chunk)
                if not message.get("more_body", False):
                    break
            body = b"".join(chunks)
            chunks.clear()  # held once: the pieces go (a request's frame lives as long as its call)
        if body is None:
            await _answer(
                send,
                408,
                None,
                f"the request body did not arrive within {self._body_timeout:g} s of its headers; "
                "send the whole request at once",
                close=True,
            )
            return
        refused = too_many_values(body) or over_budget(body, "body") or too_many_chars(body, "body")
        if refused is not None:  # before any reader holds the loop on it (rounds 28, 29)
            await _answer(send, 413, leading_id(body), f"Invalid Request: {refused}")
            return
        try:
            value = await parse_off_loop(strict_loads, body)
        except StrictJsonError as exc:
            await _answer(send, 400, _id_of(body), f"Invalid Request: {exc}; the request was not run")
            return
        except RecursionError:
            await _answer_too_deep(send, body)
            return
        except ValueError:
            value = None  # not JSON: the SDK answers it as it does
        if value is not None and too_deep(value):
            await _answer_too_deep(send, body)
            return
        for message in value if isinstance(value, list) else [value]:
            reason = bad_id_reason(message)
            if reason is not None:
                await _answer(send, 400, None, reason)
                return
            reason = bad_token_reason(message)
            if reason is not None:
                await _answer(send, 400, message["id"], reason, code=_INVALID_PARAMS)
                return
        msg_id = value.get("id") if isinstance(value, dict) and "method" in value else None
        value = None  # the parsed copy is not kept while the call runs (the SDK reads its own)
        replayed = _replay(body, receive)
        body = b""  # held by ``replayed`` alone, until the app has read it
        key = _session_of(scope)
        if msg_id is None or not key:  # no session yet (initialize): each such POST opens its own
            await self._app(scope, replayed, send)
            return
        ids = self._in_flight.setdefault(key, InFlight())
        if not ids.claim(msg_id):
            await _answer(send, 400, msg_id, InFlight.reuse_message(msg_id))
            return
        try:
            await self._app(scope, replayed, send)
        finally:  # the POST of a request stays open until it is answered or settled unanswered
            ids.release(msg_id)
            if not ids and self._in_flight.get(key) is ids:
                del self._in_flight[key]


async def _answer_too_deep(send: Send, body: bytes) -> None:
    """A body nested deeper than the SDK reads: refused under its top-level id (round 27 wave 2:
    the SDK answered "Parse error" with id null, Python's reader gave up on deeper ones)."""
    scalars = top_level_scalars(body.decode("utf-8", "surrogateescape"))
    if scalars is None:
        await _answer(send, 400, None, "Parse error: the body is not valid JSON", code=_PARSE_ERROR)
        return
    msg_id = scalars.get("id")
    await _answer(
        send,
        400,
        msg_id if is_plain_id(msg_id) else None,
        f"Invalid Request: the message is nested more than {MAX_DEPTH} levels deep; the request was "
        "not run. Send it with flatter parameters",
    )


def _session_of(scope: Scope) -> str:
    """The request's ``Mcp-Session-Id`` ("" before a session exists, and in stateless mode)."""
    for name, value in scope.get("headers") or ():
        if name.lower() == b"mcp-session-id":
            return bytes(value).decode("latin-1")
    return ""


def _replay(body: bytes, receive: Receive) -> Receive:
    """``receive`` giving ``body`` first (and forgetting it), then the client's own events (disconnects)."""
    pending = [body]

    async def replayed() -> Message:
        if pending:
            return {"type": "http.request", "body": pending.pop(), "more_body": False}
        return await receive()

    return replayed


def _id_of(body: bytes) -> str | int | None:
    """The request's id as Python's lenient reader sees it (echoed when it is a plain id)."""
    try:
        value: Any = lenient_loads(body)  # a number Python will not read: the id is still found
    except (ValueError, RecursionError):
        return None
    msg_id = value.get("id") if isinstance(value, dict) else None
    return msg_id if is_plain_id(msg_id) else None


async def _answer(
    send: Send,
    status: int,
    msg_id: str | int | None,
    message: str,
    *,
    close: bool = False,
    code: int = _INVALID_REQUEST,
) -> None:
    """``close``: the client's body is not read to its end, so the connection ends with the answer
    (uvicorn would otherwise keep reading what the client still sends)."""
    payload = {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}
    data = json.dumps(payload, ensure_ascii=True).encode("ascii")
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})
