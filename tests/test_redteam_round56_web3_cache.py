"""Red team round 56 (web3): WebFetch's 15-minute cache kept pages whose conversion was cut short.

A page is cached under its URL by the tool (its session's; every session's where an embedder shares
the tool). A result whose text is missing for a reason of the moment -- the call's deadline reached
before or during the conversion, every converter busy, a converter that failed -- was cached as the
page: its note said "Try again", and the next call got the same empty text from the cache for 15
minutes. A server slow once (or another page keeping the process's converters busy) so blanked a page.
A raw server answers the first request slowly (its body after the conversion's deadline) and the second at once.
"""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import anyio

from shellrt.protocol import ToolContext
from shellrt.tools.web_fetch import WebFetchInput, WebFetchTool

_PAGE = b"<html><body><h1>Title</h1><p>The real text of the page.</p></body></html>"


def _serve(listener: socket.socket, delays: list[float]) -> None:
    for delay in delays:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        with conn:
            conn.settimeout(10)
            data = b""
            while b"\r\n\r\n" not in data and len(data) < 65536 and (chunk := conn.recv(4096)):
                data += chunk
            head = (
                b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n"
                b"Content-Length: " + str(len(_PAGE)).encode() + b"\r\n\r\n"
            )
            conn.sendall(head)
            time.sleep(delay)
            try:
                conn.sendall(_PAGE)
            except OSError:
                pass


def _ctx(tmp_path: Path, session: str) -> ToolContext:
    return ToolContext(
        session_id=session, session_dir=tmp_path, workspace=tmp_path, cwd=str(tmp_path),
        settings={"webFetch": {"allowPrivateHosts": ["127.0.0.1"], "timeoutSeconds": 2.5}},
    )  # fmt: skip


def test_a_page_cut_short_by_the_deadline_is_not_served_from_the_cache(tmp_path: Path) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(5)  # a request that never comes (served from the cache) ends the server
    with listener:
        port = listener.getsockname()[1]
        # First answer: its body after the conversion's deadline (2.5 s less the 0.5 s margin).
        thread = threading.Thread(target=_serve, args=(listener, [1.9, 0.0]), daemon=True)
        thread.start()
        tool = WebFetchTool()
        url = f"http://127.0.0.1:{port}/doc"

        async def go() -> tuple[str, str, bool]:
            first = await tool.call(WebFetchInput(url=url), _ctx(tmp_path, "a"))
            second = await tool.call(WebFetchInput(url=url), _ctx(tmp_path, "b"))
            return first.data.note, second.data.content, second.data.from_cache

        first_note, second_text, second_cached = anyio.run(go)
        thread.join(10)
    assert first_note, "the first fetch was expected to be cut short by its deadline"
    assert not second_cached, f"a page cut short was served from the cache: {second_text!r}"
    assert "real text of the page" in second_text
