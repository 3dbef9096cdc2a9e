"""A request framed two ways is refused, and its connection closed (``shellrt serve --http``).

A request with both ``Transfer-Encoding`` and ``Content-Length`` was read by its chunks and the
connection kept open, so the bytes after the chunks were read as the next request (round 27 wave
2: a TE+CL request and a request pipelined after it were both answered). A proxy in front (TLS
for ``--allow-remote``, as the help advises) that reads by ``Content-Length`` sees other request
boundaries: the classic request smuggling. RFC 9112 (6.3) says such a request ought to be an
error and the connection must close after it; here it gets ``400`` with ``connection: close``,
before the token check and the app, and nothing of its body is read.
"""

from __future__ import annotations

import json

from shellrt.server._http_auth import AsgiApp, Receive, Scope, Send

__all__ = ["FramingCheckMiddleware"]


class FramingCheckMiddleware:
    """ASGI middleware: an HTTP request with both Transfer-Encoding and Content-Length gets 400 and the connection ends."""

    def __init__(self, app: AsgiApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") == "http":
            names = {bytes(name).lower() for name, _ in scope.get("headers") or ()}
            if b"transfer-encoding" in names and b"content-length" in names:
                await _refuse(send)
                return
        await self._app(scope, receive, send)


async def _refuse(send: Send) -> None:
    body = json.dumps(
        {
            "error": "bad_request",
            "message": "the request has both Transfer-Encoding and Content-Length; send one of them",
        }
    ).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": 400, "headers": headers})
    await send({"type": "http.response.body", "body": body})
