"""Red team, round 37 (review3): the MCP session cap's per-peer share, taken once per IPv6 address.

Round 37 (iface) capped ``serve --http``'s MCP sessions (512) with a share per client address (128)
and made a newcomer end the longest-idle session, the full peer's own first. The share was keyed by
the address as the socket shows it: a client given an IPv6 /64 (2^64 addresses; the usual grant to
one host) took a fresh share from each address, so it filled the whole table and ended every other
client's idle session, as if there were no share; and a dual-stack socket's ``::ffff:a.b.c.d`` was
another client than ``a.b.c.d``. Here through the middleware itself, with the SDK's session table
replaced by a small one (no server needed to show the keying).
"""

from __future__ import annotations

import itertools
from typing import Any

import anyio
import pytest

from shellrt.server._http_sessions import SessionCapMiddleware

pytestmark = pytest.mark.anyio


class _Transport:
    def __init__(self) -> None:
        self.idle_scope = anyio.CancelScope()
        self.idle_scope.deadline = anyio.current_time() + 60.0
        self._idle_timeout = 60.0
        self.is_terminated = False


class _Manager:
    """The SDK manager's surface the middleware uses: its table and the way to end a session."""

    def __init__(self) -> None:
        self._server_instances: dict[str, Any] = {}
        self.ended: list[str] = []
        self._ids = itertools.count()

    async def _discard_session(self, key: str, transport: Any) -> None:
        self._server_instances.pop(key, None)
        self.ended.append(key)

    async def app(self, scope: Any, receive: Any, send: Any) -> None:
        key = f"s{next(self._ids)}"
        self._server_instances[key] = _Transport()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"mcp-session-id", key.encode())]})
        await send({"type": "http.response.body", "body": b"{}"})


async def _open(cap: SessionCapMiddleware, host: str) -> int:
    status = []

    async def send(message: Any) -> None:
        if message["type"] == "http.response.start":
            status.append(message["status"])

    async def receive() -> Any:
        return {"type": "http.request", "body": b"", "more_body": False}

    scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": [], "client": (host, 40000)}
    await cap(scope, receive, send)
    await anyio.sleep(0.001)  # each later session is idle for less time
    return status[0]


async def test_one_ipv6_prefix_takes_one_share() -> None:
    manager = _Manager()
    cap = SessionCapMiddleware(manager.app, manager, max_sessions=8, max_per_peer=2)
    assert await _open(cap, "2001:db8:1::1") == 200  # the victim's session, idle the longest
    victim = next(iter(manager._server_instances))
    for i in range(40):  # the attacker's /64, a new address each time
        assert await _open(cap, f"2001:db8:2::{i + 1:x}") == 200
    assert victim in manager._server_instances, "the victim's session was ended for one client's addresses"
    attacker = [k for k in manager._server_instances if k != victim]
    assert len(attacker) == 2


async def test_ipv4_mapped_is_the_same_client() -> None:
    manager = _Manager()
    cap = SessionCapMiddleware(manager.app, manager, max_sessions=8, max_per_peer=2)
    for host in ["10.0.0.7", "::ffff:10.0.0.7", "10.0.0.7", "::ffff:10.0.0.7"]:
        assert await _open(cap, host) == 200
    assert len(manager._server_instances) == 2


def test_peer_keys() -> None:
    from shellrt.server._http_sessions import peer_key

    assert peer_key("2001:db8:2::1") == peer_key("2001:db8:2::ffff:1") == "2001:db8:2::/64"
    assert peer_key("2001:db8:3::1") != peer_key("2001:db8:2::1")
    assert peer_key("::ffff:127.0.0.1") == peer_key("127.0.0.1") == "loopback"  # round 38: one peer
    assert peer_key("fe80::1%eth0") == "fe80::/64"
    assert peer_key("unix-socket") == "unix-socket"
