"""Red team round 18 (web): WebFetch's HTML conversion kept whatever the parser's last piece was.

Round 12 bounds the text a page leaves in the result and the 15-minute cache (32 pages) at
`MAX_CONVERTED_CHARS`; the converter stops once it produced more. But an unclosed ``<!--``,
``<![CDATA[``, ``<?`` or ``<!DOCTYPE`` is held by the HTML parser until it closes, then handed
over in one piece: a 2 MB page kept 2 MB of text (10 MB at the default ``maxBytes``), and 32
such pages held the cache at ten times its bound. A real server on 127.0.0.1 serves them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from shellrt.protocol import ToolContext
from shellrt.tools.web_fetch import MAX_CONVERTED_CHARS, WebFetchInput, WebFetchTool
from tests._http_server import _Server, serve

FILLER = b"x y\n" * 500_000  # 2 MB of text
OPENERS = {"comment": b"<!--", "cdata": b"<![CDATA[", "pi": b"<?x ", "doctype": b"<!DOCTYPE "}
ROUTES = {
    f"/{name}": (
        200,
        {"Content-Type": "text/html; charset=utf-8"},
        b"<html><body><p>hi</p>" + opener + FILLER,
    )
    for name, opener in OPENERS.items()
}


@pytest.fixture
def server() -> Iterator[_Server]:
    with serve(ROUTES) as srv:
        yield srv


@pytest.mark.parametrize("name", sorted(OPENERS))
def test_an_unclosed_construct_leaves_no_more_text_than_is_kept(
    tmp_path: Path, server: _Server, name: str
) -> None:
    ctx = ToolContext(
        session_id="s",
        session_dir=tmp_path,
        workspace=tmp_path,
        cwd=str(tmp_path),
        settings={"webFetch": {"allowPrivateHosts": ["127.0.0.1"]}},
    )
    tool = WebFetchTool()

    async def go() -> object:
        url = f"http://127.0.0.1:{server.server_port}/{name}"
        return (await tool.call(WebFetchInput(url=url), ctx)).data

    out = anyio.run(go)
    assert server.hits[f"/{name}"] == 1
    content = getattr(out, "content", "")
    assert content.startswith("hi"), content[:80]
    assert len(content) <= MAX_CONVERTED_CHARS, f"{len(content):,} characters kept"
    assert "more text than is kept" in getattr(out, "note", ""), out
    cached = [len(getattr(entry[1], "content", "")) for entry in tool._cache.values()]
    assert cached and max(cached) <= MAX_CONVERTED_CHARS, cached
