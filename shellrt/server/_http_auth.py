"""Bearer-token check in front of the MCP HTTP app (``shellrt serve --http``).

Loopback is not a boundary: another local user, or a command running with the
host's network, can reach ``127.0.0.1``. Without a token such a process could
open its own MCP session, run tools and approve its own permission asks. Every
HTTP request must therefore carry ``Authorization: Bearer <token>``; anything
else gets 401 before the MCP app sees it. Lifespan events pass through (they
are uvicorn's own, not a client's); websockets, which the app does not serve,
are closed unless authorized.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

__all__ = ["BearerAuthMiddleware", "bearer_token_of"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
AsgiApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: RFC 6455 close code for a websocket refused by policy.
_WS_POLICY_VIOLATION = 1008


def bearer_token_of(scope: Scope) -> bytes | None:
    """The credentials of the request's single ``Authorization: Bearer`` header, else None.

    Two Authorization headers are refused (None): which one a proxy in front
    would have checked is ambiguous.
    """
    values = [value for name, value in scope.get("headers", ()) if name.lower() == b"authorization"]
    if len(values) != 1:
        return None
    scheme, _, credentials = bytes(values[0]).strip().partition(b" ")
    if scheme.lower() != b"bearer":
        return None
    credentials = credentials.strip()
    return credentials or None


class BearerAuthMiddleware:
    """ASGI middleware: the wrapped app only sees requests bearing ``token``.

    ``where`` tells a refused client where the token is found (a file path or
    an environment variable), never the token itself.
    """

    def __init__(self, app: AsgiApp, token: str, *, where: str) -> None:
        if not token:
            raise ValueError("an empty bearer token would let every request in")
        self._app = app
        self._token = token.encode()
        self._where = where

    def _authorized(self, scope: Scope) -> bool:
        given = bearer_token_of(scope)
        return given is not None and hmac.compare_digest(given, self._token)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope.get("type")
        if kind == "lifespan" or (kind in ("http", "websocket") and self._authorized(scope)):
            await self._app(scope, receive, send)
        elif kind == "websocket":
            await send({"type": "websocket.close", "code": _WS_POLICY_VIOLATION})
        elif kind == "http":
            await self._refuse(send)
        else:
            raise RuntimeError(f"shellrt serve: unexpected ASGI scope type {kind!r}; refused")

    async def _refuse(self, send: Send) -> None:
        body = json.dumps(
            {
                "error": "unauthorized",
                "message": "shellrt serve needs Authorization: Bearer <token>; "
                f"the token is in {self._where}",
            }
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", b'Bearer realm="shellrt"'),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
