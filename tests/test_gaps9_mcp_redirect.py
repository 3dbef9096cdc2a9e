"""Round 8's open gap: an MCP HTTP server's configured headers followed a redirect to another origin.

httpx drops only ``Authorization`` on a cross-origin redirect, and MCP SDKs before 2.x follow
every redirect: a server answering ``307 Location: http://elsewhere/`` had its ``X-Api-Key``
(any configured header) sent there. Real HTTP servers on 127.0.0.1, another port being another
origin. The client's hook is checked with redirects followed (as httpx and older SDKs do), and
through a real connection (what the installed SDK does).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import anyio
import pytest

from shellrt.tools.mcp import McpServerError
from shellrt.tools.mcp._http_client import mcp_http_client, origin_of
from shellrt.tools.mcp.config import HttpServerConfig
from shellrt.tools.mcp.connection import McpServerConnection
from tests._http_server import serving

pytestmark = pytest.mark.anyio

HEADERS = {"Authorization": "Bearer home-only", "X-Api-Key": "k3y-home-only"}


class _Recorder(ThreadingHTTPServer):
    daemon_threads = True
    seen: list[dict[str, str]]
    location: str | None


class _Handler(BaseHTTPRequestHandler):
    server: _Recorder

    def _answer(self) -> None:
        self.server.seen.append({k.lower(): v for k, v in self.headers.items()})
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        if self.server.location and self.path != "/same":
            self.send_response(307)
            self.send_header("Location", self.server.location)
        else:
            self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST = do_DELETE = _answer  # noqa: N815 - http.server naming

    def log_message(self, format: str, *args: object) -> None:
        return None


@contextmanager
def _server(location: str | None = None) -> Iterator[_Recorder]:
    server = _Recorder(("127.0.0.1", 0), _Handler)
    server.seen, server.location = [], location
    with serving(server):
        yield server


def _url(server: _Recorder, path: str = "/mcp") -> str:
    return f"http://127.0.0.1:{server.server_port}{path}"


def test_origins() -> None:
    assert origin_of("https://A.example/x") == ("https", "a.example", 443)
    assert origin_of("http://a.example:80/") == origin_of("http://a.example/y")
    assert origin_of("http://a.example:8080/") != origin_of("http://a.example/")


async def test_configured_headers_do_not_follow_a_redirect_to_another_origin() -> None:
    with _server() as elsewhere, _server(_url(elsewhere, "/stolen")) as home:
        client = mcp_http_client(_url(home), HEADERS)
        async with client:
            await client.get(_url(home), follow_redirects=True)
        assert [h.get("x-api-key") for h in home.seen] == ["k3y-home-only"]
        assert elsewhere.seen, "the redirect was followed"
        assert not {"authorization", "x-api-key"} & set(elsewhere.seen[0]), elsewhere.seen


async def test_a_redirect_within_the_origin_keeps_them() -> None:
    with _server() as home:
        home.location = _url(home, "/same")
        client = mcp_http_client(_url(home), HEADERS)
        async with client:
            await client.get(_url(home), follow_redirects=True)
        assert [h.get("x-api-key") for h in home.seen] == ["k3y-home-only"] * 2


async def test_a_connection_sends_nothing_configured_to_another_origin() -> None:
    with _server() as elsewhere, _server(_url(elsewhere, "/stolen")) as home:
        config = HttpServerConfig(url=_url(home), headers=HEADERS, startup_timeout=10)
        async with anyio.create_task_group() as tg:
            connection = McpServerConnection("redirecting", config, tg)
            with pytest.raises(McpServerError):
                await connection.list_tools()
            await connection.close()
        assert home.seen and home.seen[0].get("x-api-key") == "k3y-home-only"
        for seen in elsewhere.seen:
            assert not {"authorization", "x-api-key"} & set(seen), seen
