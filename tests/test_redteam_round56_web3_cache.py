"""Red team round 56 (web3): WebFetch's 15-minute cache kept pages whose conversion was cut short.

A page is cached under its URL by the tool (its session's; every session's where an embedder shares
the tool). A result whose text is missing for a reason of the moment -- the call's deadline reached
before or during the conversion, every converter busy, a converter that failed -- was cached as the
page: its note said "Try again", and the next call got the same empty text from the cache for 15
minutes. A server slow once (or another page keeping the process's converters busy) so blanked a page.
A raw server answers first with 8 MB of empty tags (seconds to convert: cut at the deadline), then with
the real page.
"""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import anyio
import pytest

from shellrt.protocol import ToolContext, ToolExecutionError
from shellrt.tools import _convert_worker
from shellrt.tools.web_fetch import WebFetchInput, WebFetchTool

_PAGE = b"<html><body><h1>Title</h1><p>The real text of the page.</p></body></html>"
#: Converts at ~1.5 MB/s to nothing: past the call's 3 s deadline on any machine.
_SLOW = b"<html><body>" + b"<span></span>" * 600_000 + b"</body></html>"


def _serve(listener: socket.socket, bodies: list[bytes]) -> None:
    for body in bodies:
        listener.settimeout(10.0)  # the second request comes after the first call's 3 s, if at all
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
                b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n"
            )
            try:
                conn.sendall(head + body)
            except OSError:
                pass


def _ctx(tmp_path: Path, session: str, timeout_s: float) -> ToolContext:
    return ToolContext(
        session_id=session, session_dir=tmp_path, workspace=tmp_path, cwd=str(tmp_path),
        settings={"webFetch": {"allowPrivateHosts": ["127.0.0.1"], "timeoutSeconds": timeout_s}},
    )  # fmt: skip


def _attempt(tmp_path: Path) -> tuple[str, str, bool] | None:
    """The slow page then the real one, by one tool: the first call's note, the second's text and
    whether it came from the cache; None when the first call overran its deadline (a loaded machine
    killing and replacing the converter: nothing was cached then)."""
    listener = socket.create_server(("127.0.0.1", 0))
    with listener:
        port = listener.getsockname()[1]
        thread = threading.Thread(target=_serve, args=(listener, [_SLOW, _PAGE]), daemon=True)
        thread.start()
        tool = WebFetchTool()
        url = f"http://127.0.0.1:{port}/doc"

        async def go() -> tuple[str, str, bool] | None:
            try:
                first = await tool.call(WebFetchInput(url=url), _ctx(tmp_path, "a", 3))
            except ToolExecutionError:
                return None
            # Time enough for a loaded machine to start the killed converter's successor.
            second = await tool.call(WebFetchInput(url=url), _ctx(tmp_path, "b", 30))
            return first.data.note, second.data.content, second.data.from_cache

        result = anyio.run(go)
        thread.join(10)
    return result


def test_a_page_cut_short_by_the_deadline_is_not_served_from_the_cache(tmp_path: Path) -> None:
    try:
        for _ in range(3):
            result = _attempt(tmp_path)
            if result is not None:
                break
        else:
            pytest.fail("every first fetch overran its deadline: the machine is too loaded to tell")
    finally:
        # The killed converter's successor starts in the background: no other test of this process
        # should count it as its own (round 20 counts workers).
        limit = time.monotonic() + 5
        while _convert_worker._starting and time.monotonic() < limit:
            time.sleep(0.05)
        _convert_worker.shutdown()
    first_note, second_text, second_cached = result
    assert "too long" in first_note or "deadline" in first_note, first_note
    assert not second_cached, f"a page cut short was served from the cache: {second_text!r}"
    assert "real text of the page" in second_text
