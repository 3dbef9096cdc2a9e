"""Bounds on the MCP sessions of ``shellrt serve --http``: a cap, a per-peer share of it, and
eviction of the longest-idle session when a newcomer needs room.

Why: the MCP SDK keeps a stateful session until the client sends DELETE or it has had no
request in flight for its idle timeout (30 minutes), up to 10,000 sessions, then answers every
new ``initialize`` 503. One token holder opened 1,000 sessions in 6.5 s (~37 KB each), so it could
fill the table in about a minute and lock every other client out for half an hour (red team,
round 36 Left). All loopback clients are one peer address and share one token, so neither
separates them alone: as for connections (`shellrt.server._http_guard`), the table is capped
(`MAX_SESSIONS`), one peer address (an IPv6 peer's /64: `peer_key`) holds at most
`MAX_SESSIONS_PER_PEER`, and a newcomer makes room by ending the session idle the longest, the
full peer's own first and sessions that own background tasks last. A session with a request in flight (a running call, an open GET stream)
is never ended for a newcomer; with none idle, the newcomer gets 503 saying so. An ended
session's id answers 404 saying why, and the client initializes again (as MCP says on 404).
"""

from __future__ import annotations

import collections
import ipaddress
import json
import logging
import math
from collections.abc import Callable
from typing import Any

import anyio

from shellrt.server._http_auth import AsgiApp, Message, Receive, Scope, Send

__all__ = [
    "LOOPBACK_PEER",
    "MAX_SESSIONS",
    "MAX_SESSIONS_PER_PEER",
    "SESSION_IDLE_S",
    "SessionCapMiddleware",
    "peer_key",
]

log = logging.getLogger("shellrt.server")

#: Open MCP sessions at most (~37 KB each); beyond, the longest-idle one is ended for a newcomer.
MAX_SESSIONS = 512
#: Open MCP sessions of one peer address at most (every loopback client is one peer).
MAX_SESSIONS_PER_PEER = 128
#: Seconds a session may have no request in flight before it ends (the SDK's default).
SESSION_IDLE_S = 30 * 60.0
#: Ids of sessions ended for a newcomer, remembered to say so (oldest forgotten first).
_EVICTED_REMEMBERED = 4096
#: The one share of every loopback address (a local client chooses its source address freely).
LOOPBACK_PEER = "loopback"
_HEADER = b"mcp-session-id"


class SessionCapMiddleware:
    """ASGI middleware in front of the SDK's streamable HTTP app: makes room before a session opens.

    ``manager`` is the SDK's ``StreamableHTTPSessionManager`` (its session table is read, and a
    session is ended through it); ``owns_tasks`` tells whether a session's calls started
    background tasks (such a session is ended last: its tasks stop with it).
    """

    def __init__(
        self,
        app: AsgiApp,
        manager: Any,
        *,
        path: str = "/mcp",
        max_sessions: int = MAX_SESSIONS,
        max_per_peer: int | None = None,
        owns_tasks: Callable[[str], bool] = lambda _key: False,
    ) -> None:
        per_peer = min(MAX_SESSIONS_PER_PEER, max_sessions) if max_per_peer is None else max_per_peer
        if max_sessions < 1 or not 1 <= per_peer <= max_sessions:
            raise ValueError("the session cap must be at least 1, the per-peer cap at least 1 and at most it")
        self._app = app
        self._manager = manager
        self._path = path.rstrip("/") or "/"
        self._max = max_sessions
        self._per_peer = per_peer
        self._owns_tasks = owns_tasks
        self._lock = anyio.Lock()
        #: Session id -> the peer address whose request opened it.
        self._peers: dict[str, str] = {}
        #: Peer address -> sessions being opened (admitted here, not yet in the SDK's table).
        self._opening: collections.Counter[str] = collections.Counter()
        self._evicted: collections.OrderedDict[str, float] = collections.OrderedDict()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self._app(scope, receive, send)
            return
        key = _session_of(scope)
        table = self._table()
        if key is not None:
            if table is not None and key not in table and key in self._evicted:
                idle = self._evicted[key]
                await _answer(
                    send,
                    404,
                    f"Session not found: it was ended after {idle:.0f} s without a request to make room "
                    f"for a new session ({self._max} at most, {self._per_peer} per client address). "
                    "Initialize a new session; end sessions you no longer use with DELETE",
                )
                return
            await self._app(scope, receive, send)
            return
        if scope.get("method") != "POST" or table is None or not self._serves(scope):
            await self._app(scope, receive, send)
            return
        peer = _peer_of(scope)
        async with self._lock:
            refused = await self._make_room(table, peer)
            if refused is None:
                self._opening[peer] += 1
        if refused is not None:
            log.warning("MCP sessions full: a new session was refused (%s)", refused)
            await _answer(send, 503, refused)
            return
        opening = True

        def settled() -> None:
            nonlocal opening
            if opening:
                opening = False
                self._opening[peer] -= 1
                if self._opening[peer] <= 0:
                    del self._opening[peer]

        async def noting(message: Message) -> None:
            if message.get("type") == "http.response.start":
                for name, value in message.get("headers") or ():
                    if bytes(name).lower() == _HEADER:
                        self._peers[bytes(value).decode("latin-1")] = peer
                settled()  # the SDK admitted (or refused) the session before answering
            await send(message)

        try:
            await self._app(scope, receive, noting)
        finally:
            settled()

    def _serves(self, scope: Scope) -> bool:
        """Whether the request is for the MCP endpoint (another path opens no session)."""
        path = str(scope.get("path", ""))
        return (path.rstrip("/") or "/") == self._path

    def _table(self) -> dict[str, Any] | None:
        table = getattr(self._manager, "_server_instances", None)
        return table if isinstance(table, dict) else None

    async def _make_room(self, table: dict[str, Any], peer: str) -> str | None:
        """End idle sessions until one more of ``peer`` fits both caps; else why it cannot."""
        for gone in [k for k in self._peers if k not in table]:
            del self._peers[gone]
        while True:
            mine = [k for k in table if self._peers.get(k) == peer]
            if len(mine) + self._opening[peer] >= self._per_peer:
                if not await self._end_idlest(mine, table):
                    return (
                        f"this client address has {len(mine)} MCP sessions open (at most {self._per_peer}) and "
                        "every one has a request in flight; end one (DELETE) or retry when a call has finished"
                    )
                continue
            if len(table) + sum(self._opening.values()) >= self._max:
                if not await self._end_idlest(list(table), table):
                    return (
                        f"this server has {len(table)} MCP sessions open (at most {self._max}) and every one "
                        "has a request in flight; retry when a call has finished"
                    )
                continue
            return None

    async def _end_idlest(self, keys: list[str], table: dict[str, Any]) -> bool:
        """End the longest-idle of ``keys`` (those owning tasks last); False when none is idle."""
        now = anyio.current_time()
        idle: list[tuple[bool, float, str]] = []
        for key in keys:
            since = _idle_since(table.get(key))
            if since is not None:
                idle.append((self._owns_tasks(key), since, key))
        if not idle:
            return False
        _tasks, since, victim = min(idle)
        transport = table.get(victim)
        self._evicted[victim] = now - since
        while len(self._evicted) > _EVICTED_REMEMBERED:
            self._evicted.popitem(last=False)
        log.info("MCP sessions full: ended one idle for %.1f s", now - since)
        self._peers.pop(victim, None)
        await self._manager._discard_session(victim, transport)
        return True


def _idle_since(transport: Any) -> float | None:
    """When the session's last request ended (anyio clock), None while one is in flight or it opens."""
    scope = getattr(transport, "idle_scope", None)
    timeout = getattr(transport, "_idle_timeout", None)
    if getattr(transport, "is_terminated", False):
        return -math.inf  # ending already: taken out first
    if scope is None or not isinstance(timeout, int | float):
        return None
    deadline = scope.deadline
    if not math.isfinite(deadline):
        return None
    return float(deadline - timeout)


def _session_of(scope: Scope) -> str | None:
    for name, value in scope.get("headers") or ():
        if bytes(name).lower() == _HEADER:
            return bytes(value).decode("latin-1")
    return None


def _peer_of(scope: Scope) -> str:
    client = scope.get("client")
    if isinstance(client, list | tuple) and client:
        return peer_key(str(client[0]))
    return ""


def peer_key(host: str) -> str:
    """The share a client address counts against: an IPv4 address (also spelt IPv4-mapped,
    ``::ffff:a.b.c.d``, as a dual-stack socket shows it), or an IPv6 address's /64.

    Why: one IPv6 host is routinely given a whole /64 (2^64 addresses), so per address a client
    with ``--allow-remote`` took a fresh share of the caps from each, filled the table and ended
    the other clients' idle sessions (red team, round 37, review3). Every loopback address
    (127.0.0.0/8, ::1) is one peer, `LOOPBACK_PEER`: a local client may bind any of 2^24 source
    addresses, and took a share from each (round 38)."""
    try:
        address = ipaddress.ip_address(host.partition("%")[0])
    except ValueError:
        return host
    if address.is_loopback or (isinstance(address, ipaddress.IPv6Address) and _mapped_loopback(address)):
        return LOOPBACK_PEER
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)


def _mapped_loopback(address: ipaddress.IPv6Address) -> bool:
    mapped = address.ipv4_mapped
    return mapped is not None and mapped.is_loopback


async def _answer(send: Send, status: int, message: str) -> None:
    payload = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}
    data = json.dumps(payload, ensure_ascii=True).encode("ascii")
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})
