"""Red team, round 48 (net3): a ``<![`` that html.parser cannot read no longer blanks the page.

html.parser raises ``AssertionError`` at a ``<![`` that opens no marked section it knows (``<![x[``,
``<![ [``; a browser reads either as a bogus comment). The exception was no error the converter's
page process handled: it ended (exit status 1), the worker with it (the host starts a new one), and
WebFetch showed the page as nothing (``Converting the page to text failed``): any page, hostile or
a Word export, could hide all its text that way and cost a worker's restart per fetch. Now each
such ``<![`` is text (``&lt;![``) before parsing: the rest of the page converts. A real HTTP server
on 127.0.0.1 and the real converter process.
"""

from __future__ import annotations

from pathlib import Path

import anyio

from shellrt.protocol import ToolContext
from shellrt.tools.web_fetch import WebFetchInput, WebFetchTool
from tests._http_server import serve

PAGE = (
    b"<html><body><p>Before the section.</p><![x[ hidden? ]]><p>Between.</p><![ [ <![if !supportLists]>"
    b"<p>Listed.</p><![endif]><p>After the section.</p></body></html>"
)


def test_an_unknown_marked_section_leaves_the_page_readable(tmp_path: Path) -> None:
    with serve({"/p": (200, {"Content-Type": "text/html"}, PAGE)}) as server:
        port = int(server.server_port)
        ctx = ToolContext(
            session_id="s",
            session_dir=tmp_path,
            workspace=tmp_path,
            cwd=str(tmp_path),
            settings={
                "webFetch": {"timeoutSeconds": 20, "allowPrivateHosts": ["127.0.0.1"], "allowPorts": [port]}
            },
        )
        out = anyio.run(WebFetchTool().call, WebFetchInput(url=f"http://127.0.0.1:{port}/p"), ctx).data
    assert out.note == "", out.note
    for text in ("Before the section.", "Between.", "Listed.", "After the section."):
        assert text in out.content, out.content
