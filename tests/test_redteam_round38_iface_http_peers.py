"""Red team, round 38 (iface): the client address the session and connection shares count is the client's
choice on loopback.

Round 37 gave each client address a share of ``serve --http``'s MCP sessions (128 of 512) and its
connections (64), keyed by `peer_key`, on the premise that "all loopback clients are one peer". Two
ways let one local token holder be as many peers as it liked:
- uvicorn's proxy-header support is on by default and trusts ``X-Forwarded-For`` from 127.0.0.1 and
  ::1: every request could name its own client address (and ``X-Forwarded-Proto`` its scheme);
- the whole of 127.0.0.0/8 is this host: a client binding 127.0.0.2, 127.0.0.3, ... before connecting
  to 127.0.0.1 was a new peer each time.
Either way one client filled the whole table and ended every other client's idle session (remote
clients' too, with ``--allow-remote``), and held every connection. Real server processes and sockets.
"""

from __future__ import annotations

import contextlib
import http.client
import json
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from shellrt.server._http_sessions import MAX_SESSIONS_PER_PEER, SessionCapMiddleware, peer_key
from tests.test_mcp_http_auth import _INITIALIZE, TOKEN, Served, served
from tests.test_redteam_round37_review3_session_peers import _Manager, _open

_AUTH = {"Authorization": f"Bearer {TOKEN}"}
_PING = {"jsonrpc": "2.0", "id": 7, "method": "ping"}


@contextlib.contextmanager
def _served(tmp: Path) -> Iterator[Served]:
    with served(tmp, env={"SHELLRT_SERVE_TOKEN": TOKEN}) as srv:
        yield srv


def _post(
    srv: Served, body: dict[str, object], headers: dict[str, str], source: str = "127.0.0.1"
) -> tuple[int, dict[str, str], bytes]:
    """One raw JSON-RPC POST from ``source`` (a local address the client binds before connecting)."""
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=20, source_address=(source, 0))
    try:
        conn.request(
            "POST",
            "/mcp",
            body=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers},
        )
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def _opened(srv: Served, *, forwarded: bool = False, source: bool = False) -> list[str]:
    """One more session than a peer's share, each naming (or coming from) a new address."""
    ids = []
    for i in range(MAX_SESSIONS_PER_PEER + 2):
        headers = dict(_AUTH)
        if forwarded:
            headers["X-Forwarded-For"] = f"10.9.{i // 250}.{i % 250 + 1}"
        address = f"127.0.{i // 250}.{i % 250 + 2}" if source else "127.0.0.1"
        status, got, body = _post(srv, _INITIALIZE, headers, address)
        assert status == 200, (i, status, body)
        ids.append(got["mcp-session-id"])
    return ids


def _first_is_ended(srv: Served, ids: list[str]) -> None:
    status, _headers, body = _post(srv, _PING, {**_AUTH, "Mcp-Session-Id": ids[0]})
    assert status == 404 and b"to make room" in body, (
        f"the first of {len(ids)} sessions of one client still answered {status}: each address it "
        "named or bound took a share of its own"
    )
    status, _headers, body = _post(srv, _PING, {**_AUTH, "Mcp-Session-Id": ids[-1]})
    assert status == 200, (status, body)


def test_x_forwarded_for_names_no_peer(tmp_path: Path) -> None:
    """Failed before: 130 sessions each naming a new ``X-Forwarded-For`` all stayed open (the first
    answered 200: 130 shares of one). Now the header is not read: one peer, its oldest ended."""
    with _served(tmp_path) as srv:
        _first_is_ended(srv, _opened(srv, forwarded=True))


def test_each_loopback_address_is_the_same_peer(tmp_path: Path) -> None:
    """Failed before: 130 sessions each from a new 127.0.x.y all stayed open. Now 127.0.0.0/8 and ::1
    are one peer, "loopback"."""
    with _served(tmp_path) as srv:
        _first_is_ended(srv, _opened(srv, source=True))


@pytest.mark.anyio
async def test_loopback_addresses_do_not_end_a_remote_clients_session() -> None:
    """With ``--allow-remote``: a remote client's idle session, then 40 sessions from 40 loopback
    addresses (8 at most, 2 per peer). Failed before: the remote session was ended."""
    manager = _Manager()
    cap = SessionCapMiddleware(manager.app, manager, max_sessions=8, max_per_peer=2)
    assert await _open(cap, "203.0.113.9") == 200
    victim = next(iter(manager._server_instances))
    for i in range(40):
        assert await _open(cap, f"127.0.0.{i + 2}") == 200
    assert victim in manager._server_instances, "a remote client's session was ended for one local client"
    await anyio.sleep(0)


def test_loopback_peer_keys() -> None:
    """The connection share (`_http_guard`) counts by the same key."""
    keys = {peer_key(h) for h in ("127.0.0.1", "127.0.0.2", "127.255.255.254", "::1", "::ffff:127.0.0.9")}
    assert keys == {"loopback"}, keys
    assert peer_key("10.0.0.1") == "10.0.0.1"
