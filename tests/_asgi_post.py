"""One POST through an ASGI middleware, in process: what it sent back, and what reached the app behind it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

Middleware = Callable[[Any, Any, Any], Awaitable[None]]


class RecordingApp:
    """The app behind the middleware: notes each body that reached it and answers 200."""

    def __init__(self) -> None:
        self.reached: list[bytes] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.reached.append((await receive())["body"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})


async def post(middleware: Middleware, body: bytes, headers: list[tuple[bytes, bytes]] | None = None) -> list[dict[str, Any]]:
    """The messages ``middleware`` sent for a POST of ``body`` (all of it in one piece)."""
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def record(message: dict[str, Any]) -> None:
        sent.append(message)

    await middleware({"type": "http", "method": "POST", "headers": headers or []}, receive, record)
    return sent
