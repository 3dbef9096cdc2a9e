"""Red team round 56 (web3): a same-host redirect made WebFetch send credentials.

WebFetch refuses a URL with embedded credentials (``user:password@``): it cannot log in or fetch
authenticated pages. A server's ``Location: http://admin:secret@<same host>/next`` was followed
(same host), and httpx turned the userinfo into ``Authorization: Basic ...`` on the next request: the
server chose a login WebFetch performed, and the credentials were shown to the model as the final URL.
A raw server records the heads it gets.
"""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import anyio
import pytest

from shellrt.protocol import ToolContext, ToolExecutionError
from shellrt.tools.web_fetch import WebFetchInput, WebFetchTool

_OK = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"


def _serve(listener: socket.socket, location: str, seen: list[bytes]) -> None:
    for answer in (location, ""):
        listener.settimeout(10.0 if answer else 1.0)  # a second request comes at once, if at all
        try:
            conn, _ = listener.accept()
        except OSError:
            return  # no second request: the redirect was not followed
        with conn:
            conn.settimeout(10)
            data = b""
            while b"\r\n\r\n" not in data and len(data) < 65536 and (chunk := conn.recv(4096)):
                data += chunk
            seen.append(data)
            if answer:
                conn.sendall(
                    b"HTTP/1.1 302 Found\r\nLocation: " + answer.encode() + b"\r\n"
                    b"Content-Length: 0\r\nConnection: close\r\n\r\n"
                )
            else:
                conn.sendall(_OK)


@pytest.mark.parametrize("userinfo", ["admin:s3cret@", "admin@", ":s3cret@"])
def test_a_redirect_to_a_url_with_credentials_is_not_followed(tmp_path: Path, userinfo: str) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    seen: list[bytes] = []
    with listener:
        port = listener.getsockname()[1]
        location = f"http://{userinfo}127.0.0.1:{port}/next"
        thread = threading.Thread(target=_serve, args=(listener, location, seen), daemon=True)
        thread.start()
        ctx = ToolContext(
            session_id="s", session_dir=tmp_path, workspace=tmp_path, cwd=str(tmp_path),
            settings={"webFetch": {"allowPrivateHosts": ["127.0.0.1"], "timeoutSeconds": 10}},
        )  # fmt: skip
        tool = WebFetchTool()

        async def go() -> str:
            try:
                out = await tool.call(WebFetchInput(url=f"http://127.0.0.1:{port}/"), ctx)
            except ToolExecutionError as exc:
                return str(exc)
            content = tool.to_model_content(out.data)
            return content if isinstance(content, str) else repr(content)

        shown = anyio.run(go)
        thread.join(10)
    assert seen, "the server got no request"
    assert not any(b"authorization:" in head.lower() for head in seen), seen
    assert len(seen) == 1, f"the redirect was followed: {seen[1:]!r}"
    assert "credentials" in shown, shown
