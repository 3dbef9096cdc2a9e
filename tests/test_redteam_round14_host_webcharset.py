"""Red team round 14 (host side): a page's ``charset`` names a codec that cannot decode.

WebFetch decodes a text body with the codec its Content-Type names, when that is a text
encoding with a linear decoder (round 12 refused binary transforms and ``punycode``/``idna``).
Python's ``undefined`` codec passes that check and raises on every decode, whatever the error
handler: a page served as ``text/plain; charset=undefined`` failed the call with "WebFetch failed
unexpectedly: UnicodeError …" (failed before). Now a codec is used only when it decodes at all
(a probe decode with ``errors="replace"``), else the body is read as UTF-8 like an unknown one.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx  # noqa: F401  (WebFetch imports it when called; named here for the non-root runner)
import pytest

from shellrt.protocol import ToolContext
from shellrt.tools.web_fetch import WebFetchInput, WebFetchOutput, WebFetchTool


class _Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (the handler's name)
        charset = self.path.strip("/")
        body = "caf\u00e9 page".encode()
        self.send_response(200)
        self.send_header("Content-Type", f"text/plain; charset={charset}")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("charset, shown", [("undefined", "caf\u00e9 page"), ("latin-1", "caf\u00c3\u00a9 page")])
def test_a_charset_that_cannot_decode_is_not_used(tmp_path: Path, port: int, charset: str, shown: str) -> None:
    ctx = ToolContext(
        session_id="s",
        session_dir=tmp_path,
        workspace=tmp_path,
        cwd=str(tmp_path),
        settings={"webFetch": {"allowPrivateHosts": ["127.0.0.1"], "timeoutSeconds": 10}},
    )

    async def go() -> WebFetchOutput:
        return (await WebFetchTool().call(WebFetchInput(url=f"http://127.0.0.1:{port}/{charset}"), ctx)).data

    output = anyio.run(go)
    assert output.status == 200 and output.content.strip() == shown, output
