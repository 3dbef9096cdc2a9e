"""WebFetch against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.protocol import ToolContext, ToolExecutionError
from shellrt.tools.web_fetch import CACHE_TTL_SECONDS, WebFetchInput, WebFetchTool
from tests._http_server import _Server, serve

HTML = b"""<html><head><title>T</title><style>.x{color:red}</style><script>var secret=1;</script></head>
<body><h1>Hello World</h1><p>Some <b>bold</b> text and a <a href="/next">link</a>.</p>
<ul><li>one</li><li>two</li></ul></body></html>"""

ROUTES = {
    "/page": (200, {"Content-Type": "text/html; charset=utf-8"}, HTML),
    "/plain": (200, {"Content-Type": "text/plain"}, b"just text"),
    "/json": (200, {"Content-Type": "application/json"}, b'{"a": 1}'),
    "/png": (200, {"Content-Type": "image/png"}, b"\x89PNG\r\n\x1a\n...."),
    "/same": (302, {"Location": "/page"}, b""),
    "/cross": (301, {"Location": "http://localhost:{port}/page"}, b""),
    "/loop": (302, {"Location": "/loop"}, b""),
    "/big": (200, {"Content-Type": "text/plain"}, b"A" * 5000),
    "/missing": (404, {"Content-Type": "text/plain"}, b"nope"),
}


@pytest.fixture(scope="module")
def server() -> Iterator[_Server]:
    with serve(dict(ROUTES)) as srv:
        yield srv


def make_ctx(tmp_path: Path, **web: Any) -> ToolContext:
    settings = {"webFetch": {"allowPrivateHosts": ["127.0.0.1"], **web}}
    return ToolContext(
        session_id="s", session_dir=tmp_path, workspace=tmp_path, cwd=str(tmp_path), settings=settings
    )


def fetch(tool: WebFetchTool, ctx: ToolContext, url: str, prompt: str | None = None) -> Any:
    async def go() -> Any:
        inp = WebFetchInput(url=url, prompt=prompt)
        verdict = await tool.check_permissions(inp, ctx)
        if verdict.behavior == "deny":
            raise ToolExecutionError(verdict.reason)
        out = await tool.call(inp, ctx)
        return out.data, tool.to_model_content(out.data)

    return anyio.run(go)


def base(server: _Server) -> str:
    return f"http://127.0.0.1:{server.server_port}"


def test_html_to_markdown(server: _Server, tmp_path: Path) -> None:
    data, text = fetch(
        WebFetchTool(), make_ctx(tmp_path), base(server) + "/page", prompt="what is the title?"
    )
    assert data.status == 200 and "# Hello World" in text and "**bold**" in text
    assert "* one" in text and "secret" not in text and "color:red" not in text
    assert "[link](" in text and "what is the title?" in text
    # the connection went to the checked IP, with the original Host header
    assert server.hosts[-1] == f"127.0.0.1:{server.server_port}"


def test_text_json_and_binary(server: _Server, tmp_path: Path) -> None:
    tool, ctx = WebFetchTool(), make_ctx(tmp_path)
    assert fetch(tool, ctx, base(server) + "/plain")[1].endswith(
        "just text\n[shellrt] End of the web content."
    )
    assert '{"a": 1}' in fetch(tool, ctx, base(server) + "/json")[1]
    assert "binary content of type image/png" in fetch(tool, ctx, base(server) + "/png")[1]
    with pytest.raises(ToolExecutionError, match="HTTP 404"):
        fetch(tool, ctx, base(server) + "/missing")


def test_same_host_redirect_followed(server: _Server, tmp_path: Path) -> None:
    data, text = fetch(WebFetchTool(), make_ctx(tmp_path), base(server) + "/same")
    assert data.final_url.endswith("/page") and "Hello World" in text and "Redirected from" in text


def test_cross_host_redirect_reported_not_followed(server: _Server, tmp_path: Path) -> None:
    before = server.hits["/page"]
    data, text = fetch(WebFetchTool(), make_ctx(tmp_path), base(server) + "/cross")
    assert data.redirect_to == f"http://localhost:{server.server_port}/page"
    assert "REDIRECT NOT FOLLOWED" in text and f'url="http://localhost:{server.server_port}/page"' in text
    assert server.hits["/page"] == before


def test_redirect_loop_bounded(server: _Server, tmp_path: Path) -> None:
    with pytest.raises(ToolExecutionError, match="Too many redirects"):
        fetch(WebFetchTool(), make_ctx(tmp_path, maxRedirects=3), base(server) + "/loop")


def test_body_over_cap_truncated_with_note(server: _Server, tmp_path: Path) -> None:
    data, text = fetch(WebFetchTool(), make_ctx(tmp_path, maxBytes=1000), base(server) + "/big")
    assert data.truncated and data.bytes == 1000 and "truncated" in text
    assert text.endswith("A" * 1000 + "\n[shellrt] End of the web content.") and "A" * 1001 not in text


def test_private_address_refused_before_any_connection(server: _Server, tmp_path: Path) -> None:
    hits_before = sum(server.hits.values())
    ctx = ToolContext(session_id="s", session_dir=tmp_path, workspace=tmp_path, cwd=str(tmp_path))
    tool = WebFetchTool()
    inp = WebFetchInput(url=base(server) + "/page")
    verdict = anyio.run(tool.check_permissions, inp, ctx)
    assert verdict.behavior == "deny" and "non-public" in verdict.reason
    # call() re-checks on its own (defence in depth, e.g. a hook rewrote the input)
    with pytest.raises(ToolExecutionError, match="Refused"):
        anyio.run(tool.call, inp, ctx)
    for url in (
        "http://localhost:1/",
        "http://10.0.0.1/",
        "http://169.254.169.254/latest",
        "http://[::1]:1/",
    ):
        assert anyio.run(tool.check_permissions, WebFetchInput(url=url), ctx).behavior == "deny", url
    assert sum(server.hits.values()) == hits_before


def test_subject_is_the_domain_rules_match(tmp_path: Path) -> None:
    tool = WebFetchTool()
    subject = tool.permission_subject(WebFetchInput(url="https://Docs.Example.com:8443/a?b=1"))
    assert subject.domains == ("docs.example.com",) and subject.access == "fetch"
    assert tool.is_open_world(WebFetchInput(url="https://x.org")) and tool.is_read_only(
        WebFetchInput(url="https://x.org")
    )
    assert tool.is_concurrency_safe(WebFetchInput(url="https://x.org"))
    ctx = ToolContext(session_id="s", session_dir=tmp_path, workspace=tmp_path, cwd=str(tmp_path))
    assert (
        anyio.run(tool.check_permissions, WebFetchInput(url="https://u:p@example.com/"), ctx).behavior
        == "deny"
    )


def test_cache_with_ttl(server: _Server, tmp_path: Path) -> None:
    now = [1000.0]
    tool = WebFetchTool(clock=lambda: now[0])
    ctx = make_ctx(tmp_path)
    url = base(server) + "/plain"
    before = server.hits["/plain"]
    fetch(tool, ctx, url)
    data, text = fetch(tool, ctx, url)
    assert data.from_cache and "cache" in text and server.hits["/plain"] == before + 1
    # a session that may not reach the host gets no cached copy either
    strict = ToolContext(session_id="s2", session_dir=tmp_path, workspace=tmp_path, cwd=str(tmp_path))
    with pytest.raises(ToolExecutionError, match="Refused"):
        anyio.run(tool.call, WebFetchInput(url=url), strict)
    now[0] += CACHE_TTL_SECONDS + 1
    data, _ = fetch(tool, ctx, url)
    assert not data.from_cache and server.hits["/plain"] == before + 2


def test_http_upgrade_only_when_allowed(server: _Server, tmp_path: Path) -> None:
    # With upgradeHttp the plain-HTTP test server cannot answer TLS: the fetch fails rather than
    # silently staying on http, which shows the upgrade happened.
    with pytest.raises(ToolExecutionError, match=r"https://127\.0\.0\.1"):
        fetch(WebFetchTool(), make_ctx(tmp_path, upgradeHttp=True, timeoutSeconds=2), base(server) + "/plain")
    assert fetch(WebFetchTool(), make_ctx(tmp_path), base(server) + "/plain")[0].final_url.startswith(
        "http://"
    )


def test_denied_domain_refused_before_any_connection(server: _Server, tmp_path: Path) -> None:
    """A WebFetch(domain:…) deny rule stops the call at the gate: no DNS, no connection."""
    from shellrt.permissions import build_governance

    gov = build_governance(tmp_path, deny=["WebFetch(domain:127.0.0.1)"], home=tmp_path / "home")
    ctx = make_ctx(tmp_path)  # the tool itself would allow 127.0.0.1 here
    tool = WebFetchTool()
    hits_before = sum(server.hits.values())
    inp = WebFetchInput(url=base(server) + "/page")
    decision = anyio.run(lambda: gov.gate.authorize(tool, tool.backfill(inp), ctx))
    assert decision.behavior == "deny" and "127.0.0.1" in decision.reason
    assert sum(server.hits.values()) == hits_before


def test_total_deadline_against_a_trickling_server(tmp_path: Path) -> None:
    """A server sending one byte per second must not hold a 1.5 s call open (issue 17)."""
    import socket
    import threading
    import time

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    stop = threading.Event()

    def trickle() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100\r\n\r\n")
            for _ in range(100):
                if stop.is_set():
                    return
                try:
                    conn.sendall(b"x")
                except OSError:
                    return
                time.sleep(1.0)

    thread = threading.Thread(target=trickle, daemon=True)
    thread.start()
    port = listener.getsockname()[1]
    tool = WebFetchTool()
    ctx = make_ctx(tmp_path, timeoutSeconds=1.5)
    started = time.monotonic()
    try:
        with pytest.raises(ToolExecutionError, match="in total"):
            fetch(tool, ctx, f"http://127.0.0.1:{port}/slow")
    finally:
        stop.set()
        listener.close()
    # Without a total deadline every 1 s read resets the 1.5 s read timeout and the call lasts 100 s.
    assert time.monotonic() - started < 10
