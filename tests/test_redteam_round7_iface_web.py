"""Red team round 7 (interfaces): a web page's Content-Encoding is hostile input.

httpx decodes a body with unbounded decompressors, one network read at a time: a
16 KB zstd body, or 590 bytes sent as ``Content-Encoding: gzip, gzip``, made the
host process that runs WebFetch hold 0.5-1 GB before the ``maxBytes`` cap saw a
byte (measured 1044 MB and 529 MB of RSS growth). Every session of a ``serve``
process shares that memory. A real HTTP server on 127.0.0.1; each fetch runs in its
own Python process so its peak memory is measured alone.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import zstandard

from shellrt.protocol import ToolContext, ToolExecutionError
from shellrt.tools.web_fetch import WebFetchInput, WebFetchTool
from tests._http_server import Route, _Server, serve

MIB = 1 << 20
#: What one fetch may add to its process's peak memory: the cap (10 MiB) and copies of it, far
#: below the hundreds of MiB the bombs below decode to.
PEAK_GROWTH_LIMIT_MB = 150

_PROBE = """
import json, resource, sys
import anyio
from pathlib import Path
from shellrt.protocol import ToolContext, ToolExecutionError
from shellrt.tools.web_fetch import WebFetchInput, WebFetchTool

url, tmp = sys.argv[1], Path(sys.argv[2])
ctx = ToolContext(session_id="s", session_dir=tmp, workspace=tmp, cwd=str(tmp),
                  settings={"webFetch": {"allowPrivateHosts": ["127.0.0.1"]}})

async def go():
    try:
        out = await WebFetchTool().call(WebFetchInput(url=url), ctx)
        return {"bytes": out.data.bytes, "truncated": out.data.truncated}
    except ToolExecutionError as exc:
        return {"error": str(exc)}

import httpx, zstandard  # loaded before the baseline: their import is not the fetch's memory
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
result = anyio.run(go)
result["growth_mb"] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
print(json.dumps(result))
"""


def _zstd_bomb(mib: int) -> bytes:
    c = zstandard.ZstdCompressor().compressobj()
    return b"".join(c.compress(b"\0" * MIB) for _ in range(mib)) + c.flush()


def _gzip_bomb(mib: int) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    return b"".join(c.compress(b"\0" * MIB) for _ in range(mib)) + c.flush()


def _raw_deflate(data: bytes) -> bytes:
    c = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    return c.compress(data) + c.flush()


PAGE = b"<html><body><p>" + b"hello compressed world " * 200 + b"</p></body></html>"


def _routes() -> dict[str, Route]:
    """The pages, made when the server starts: the bombs cost 1.5-4 s of CPU to compress, which every
    collecting process (three workers and the serial lane) paid at import while the routes were a
    module constant (round 52 suitetime2); the gzip bomb is compressed once for both of its routes."""
    gzip_bomb = _gzip_bomb(256)
    return {
        "/zstd-bomb": (200, {"Content-Type": "text/plain", "Content-Encoding": "zstd"}, _zstd_bomb(256)),
        "/double-gzip": (
            200,
            {"Content-Type": "text/plain", "Content-Encoding": "gzip, gzip"},
            gzip.compress(gzip_bomb, 9),
        ),
        "/gzip-bomb": (200, {"Content-Type": "text/plain", "Content-Encoding": "gzip"}, gzip_bomb),
        "/gzip": (200, {"Content-Type": "text/html", "Content-Encoding": "gzip"}, gzip.compress(PAGE)),
        "/gzip-members": (
            200,
            {"Content-Type": "text/plain", "Content-Encoding": "x-gzip"},
            gzip.compress(b"first ") + gzip.compress(b"second"),
        ),
        "/deflate": (200, {"Content-Type": "text/html", "Content-Encoding": "deflate"}, zlib.compress(PAGE)),
        "/raw-deflate": (
            200,
            {"Content-Type": "text/html", "Content-Encoding": "deflate"},
            _raw_deflate(PAGE),
        ),
        "/identity": (200, {"Content-Type": "text/plain", "Content-Encoding": "identity"}, b"plain" * 400),
    }


@pytest.fixture(scope="module")
def server() -> Iterator[_Server]:
    with serve(_routes()) as srv:
        yield srv


def _probe(server: _Server, path: str, tmp_path: Path) -> dict[str, Any]:
    url = f"http://127.0.0.1:{server.server_port}{path}"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, url, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize("path", ["/zstd-bomb", "/double-gzip"])
def test_an_encoding_webfetch_did_not_ask_for_is_refused_unread(
    server: _Server, tmp_path: Path, path: str
) -> None:
    result = _probe(server, path, tmp_path)
    assert result["growth_mb"] < PEAK_GROWTH_LIMIT_MB, result
    assert "Content-Encoding" in result.get("error", ""), result


def test_a_gzip_bomb_is_decoded_only_up_to_the_cap(server: _Server, tmp_path: Path) -> None:
    result = _probe(server, "/gzip-bomb", tmp_path)
    assert result["growth_mb"] < PEAK_GROWTH_LIMIT_MB, result
    assert result["bytes"] == 10 * MIB and result["truncated"], result


def _fetch(server: _Server, tmp_path: Path, path: str, **web: Any) -> Any:
    ctx = ToolContext(
        session_id="s",
        session_dir=tmp_path,
        workspace=tmp_path,
        cwd=str(tmp_path),
        settings={"webFetch": {"allowPrivateHosts": ["127.0.0.1"], **web}},
    )

    async def go() -> Any:
        out = await WebFetchTool().call(
            WebFetchInput(url=f"http://127.0.0.1:{server.server_port}{path}"), ctx
        )
        return out.data

    return anyio.run(go)


@pytest.mark.parametrize("path", ["/gzip", "/deflate", "/raw-deflate"])
def test_ordinary_compressed_pages_still_decode(server: _Server, tmp_path: Path, path: str) -> None:
    data = _fetch(server, tmp_path, path)
    assert "hello compressed world" in data.content and not data.truncated
    assert data.bytes == len(PAGE)


def test_several_gzip_members_identity_and_the_cap(server: _Server, tmp_path: Path) -> None:
    assert _fetch(server, tmp_path, "/gzip-members").content.endswith("first second")
    assert _fetch(server, tmp_path, "/identity").content.endswith("plain" * 400)
    capped = _fetch(server, tmp_path, "/gzip", maxBytes=100)
    assert capped.truncated and capped.bytes == 100


def test_the_request_asks_only_for_what_is_decoded(tmp_path: Path) -> None:
    seen: list[str] = []
    import http.server
    import threading

    class Echo(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server naming
            seen.append(self.headers.get("Accept-Encoding", ""))
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, format: str, *args: object) -> None:
            return None

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        ctx = ToolContext(
            session_id="s",
            session_dir=tmp_path,
            workspace=tmp_path,
            cwd=str(tmp_path),
            settings={"webFetch": {"allowPrivateHosts": ["127.0.0.1"]}},
        )

        async def go() -> None:
            await WebFetchTool().call(WebFetchInput(url=f"http://127.0.0.1:{srv.server_port}/"), ctx)

        anyio.run(go)
    finally:
        srv.shutdown()
        srv.server_close()
    assert seen == ["gzip, deflate"]


def test_a_corrupt_body_is_a_clear_error(tmp_path: Path) -> None:
    routes = {"/bad": (200, {"Content-Type": "text/plain", "Content-Encoding": "gzip"}, b"not gzip at all")}
    with serve(routes) as srv, pytest.raises(ToolExecutionError, match="corrupt"):
        _fetch(srv, tmp_path, "/bad")
