"""Red team round 37 (iface): one token holder cannot fill ``serve --http``'s MCP session table.

Round 36 Left: the SDK keeps a session 30 minutes after its last request, up to 10,000, then answers
every new ``initialize`` 503; one client opened 1,000 sessions in 6.5 s, so it could lock every other
client out for half an hour. All loopback clients are one peer address and share the token.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from shellrt.server._http_sessions import MAX_SESSIONS_PER_PEER
from tests._mcp_support import text_of
from tests.test_mcp_http_auth import _INITIALIZE, TOKEN, Served, _post, served

_AUTH = {"Authorization": f"Bearer {TOKEN}"}
_PING = {"jsonrpc": "2.0", "id": 7, "method": "ping"}


@contextlib.contextmanager
def _served(tmp: Path, *extra: str) -> Iterator[Served]:
    with served(tmp, *extra, env={"SHELLRT_SERVE_TOKEN": TOKEN}) as srv:
        yield srv


def _open_session(url: str) -> str:
    """A raw ``initialize`` (nothing after it, as a flood sends): the new session's id."""
    status, headers, body = _post(url, _INITIALIZE, _AUTH)
    assert status == 200, (status, body)
    return {k.lower(): v for k, v in headers.items()}["mcp-session-id"]


def _ping(url: str, session_id: str) -> tuple[int, bytes]:
    status, _headers, body = _post(url, _PING, {**_AUTH, "Mcp-Session-Id": session_id})
    return status, body


async def _connected_call(url: str, command: str, ready: anyio.Event, release: anyio.Event) -> str:
    """A real MCP client's session (its GET stream open): ``command`` once ``release`` is set."""
    async with (
        create_mcp_http_client(headers=_AUTH) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        ready.set()
        await release.wait()
        result = await session.call_tool("Bash", {"command": command})
        assert result.is_error is False, text_of(result)
        return text_of(result)


def test_a_flood_of_sessions_ends_the_idlest_not_a_connected_client(tmp_path: Path) -> None:
    """Failed before: all 148 flooded sessions stayed open (the table filled toward 10,000), so a
    long enough flood locked every newcomer out. Now one address holds `MAX_SESSIONS_PER_PEER`:
    the flood's oldest sessions end (404 saying why), a connected client's session lives on."""
    flood = MAX_SESSIONS_PER_PEER + 20
    with _served(tmp_path) as srv:
        outcome: dict[str, object] = {}

        async def scenario() -> None:
            ready, release = anyio.Event(), anyio.Event()

            async def connected() -> None:
                outcome["text"] = await _connected_call(srv.url, "echo still-here", ready, release)

            async with anyio.create_task_group() as tg:
                tg.start_soon(connected)
                await ready.wait()
                started = time.monotonic()
                ids = [await anyio.to_thread.run_sync(_open_session, srv.url) for _ in range(flood)]
                outcome["flood_s"] = time.monotonic() - started
                statuses = [await anyio.to_thread.run_sync(_ping, srv.url, sid) for sid in ids]
                outcome["statuses"] = statuses
                release.set()

        anyio.run(scenario)
        statuses = outcome["statuses"]
        assert isinstance(statuses, list)
        alive = [s for s, _ in statuses if s == 200]
        assert len(alive) <= MAX_SESSIONS_PER_PEER - 1, (len(alive), outcome["flood_s"])
        gone = [body for s, body in statuses if s == 404]
        assert gone and b"to make room" in gone[0] and b"Initialize a new session" in gone[0], gone[:1]
        assert statuses[-1][0] == 200  # the newest sessions are the ones kept
        assert "still-here" in str(outcome["text"])  # the connected client was never ended
        _post(srv.url, _INITIALIZE, _AUTH)  # a newcomer still gets in
        assert _open_session(srv.url)


def test_when_every_session_is_busy_a_newcomer_is_told_why(tmp_path: Path) -> None:
    """``--max-sessions 2`` with two connected clients (GET streams open: in flight): a newcomer
    gets 503 saying every session has a request in flight, and neither session is ended.
    Failed before: the option did not exist (serve refused to start)."""
    with _served(tmp_path, "--max-sessions", "2") as srv:
        answers: dict[str, object] = {}

        async def scenario() -> None:
            ready_a, ready_b, release = anyio.Event(), anyio.Event(), anyio.Event()
            async with anyio.create_task_group() as tg:

                async def client(name: str, ready: anyio.Event) -> None:
                    answers[name] = await _connected_call(srv.url, f"echo {name}-ok", ready, release)

                tg.start_soon(client, "a", ready_a)
                await ready_a.wait()
                tg.start_soon(client, "b", ready_b)
                await ready_b.wait()
                await anyio.sleep(0.3)  # both GET streams open
                answers["newcomer"] = await anyio.to_thread.run_sync(
                    lambda: _post(srv.url, _INITIALIZE, _AUTH)
                )
                release.set()

        anyio.run(scenario)
        status, _headers, body = answers["newcomer"]  # type: ignore[misc]
        assert status == 503, (status, body)
        message = json.loads(body)["error"]["message"]
        assert "request in flight" in message and "2 MCP sessions" in message, message
        assert "a-ok" in str(answers["a"]) and "b-ok" in str(answers["b"])


def test_an_idle_session_expires_after_the_timeout(tmp_path: Path) -> None:
    """``--session-idle-timeout 1.5``: a session with no request in flight answers 404 within ~3 s,
    one pinged meanwhile lives on. Failed before: the option did not exist."""
    with _served(tmp_path, "--session-idle-timeout", "1.5") as srv:
        idle, kept = _open_session(srv.url), _open_session(srv.url)
        end = time.monotonic() + 3.0
        while time.monotonic() < end:
            assert _ping(srv.url, kept)[0] == 200  # a request now and then keeps a session
            time.sleep(0.3)
        assert _ping(srv.url, idle)[0] == 404
        time.sleep(2.5)
        assert _ping(srv.url, kept)[0] == 404
