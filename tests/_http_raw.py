"""A raw-socket client of ``shellrt serve --http``, shared by the connection-bound tests
(`tests/test_redteam_round11_iface_http_slowloris.py`, `tests/test_redteam_round13_iface_http_peers.py`)."""

from __future__ import annotations

import selectors
import socket
import time
from pathlib import Path

import pytest

from tests.test_mcp_http_auth import _INITIALIZE, TOKEN, _post


def closed_within(sock: socket.socket, seconds: float) -> bool:
    """Whether the server closed ``sock`` within ``seconds`` (reads and drops what it sent)."""
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        sock.settimeout(left)
        try:
            if sock.recv(4096) == b"":
                return True
        except TimeoutError:
            return False
        except OSError:
            return True
    return False


def standing_after(socks: list[socket.socket], seconds: float) -> list[socket.socket]:
    """The sockets of ``socks`` the server has not closed within ``seconds``, all watched at once
    (`closed_within` one after another waits ``seconds`` for each one that stands)."""
    closed: set[socket.socket] = set()
    end = time.monotonic() + seconds
    with selectors.DefaultSelector() as selector:
        for sock in socks:
            selector.register(sock, selectors.EVENT_READ)
        while len(closed) < len(socks) and (left := end - time.monotonic()) > 0:
            for key, _ in selector.select(left):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                try:
                    data = sock.recv(4096)  # readable: returns at once (what it sent is dropped)
                except OSError:
                    data = b""
                if data == b"":
                    closed.add(sock)
                    selector.unregister(sock)
    return [sock for sock in socks if sock not in closed]


def initialize_works(url: str) -> None:
    """An authorised MCP ``initialize`` from 127.0.0.1 is answered."""
    status, _headers, body = _post(url, _INITIALIZE, {"Authorization": f"Bearer {TOKEN}"})
    assert status == 200, (status, body)
    assert b"protocolVersion" in body, body


def mcp_post_head(port: int, length: int, *, token: str | None = None) -> str:
    """The head of a JSON POST to ``/mcp`` on ``127.0.0.1:port`` announcing ``length`` body bytes."""
    auth = f"Authorization: Bearer {token}\r\n" if token is not None else ""
    return (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{auth}Content-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\nContent-Length: {length}\r\n\r\n"
    )


def serve_refuses(tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: tuple[str, ...], said: str) -> None:
    """``shellrt serve --http`` with ``flags`` exits non-zero and says ``said`` on stderr."""
    from shellrt.cli import main

    ws = tmp_path / "ws"
    ws.mkdir()
    code = main(["serve", "--http", "127.0.0.1:1", "--workspace", str(ws), "--sandbox", "local", *flags])
    assert code != 0
    assert said in capsys.readouterr().err
