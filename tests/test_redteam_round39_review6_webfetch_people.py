"""Red team round 39 (review6): WebFetch's people face and a Location holding controls.

Round 38 (novel3) left WebFetch's `render_result` naming the URL as the server wrote it: a
cross-host ``Location`` carrying OSC 52 (the clipboard), ``ESC[2K`` (erase the line), a C1 CSI
(``\\x9b``), RLO and a zero-width space reached the person's terminal raw, though the model's face
already percent-encodes them (`_shown_url`, round 25). A same-host Location with an ESC in its
path was followed, and httpx refused to build the request: ``httpx.InvalidURL``, no
``HTTPError``, left the tool as "failed unexpectedly" (round 37's class, on the followed hop); a
model's own URL with an ESC did the same. A hostile web server on 127.0.0.1 answers each.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from shellrt.protocol import ToolContext, ToolExecutionError
from shellrt.tools.web_fetch import WebFetchInput, WebFetchTool
from tests._http_server import serve

#: What a terminal acts on or a reader cannot see, as a server may write it in a Location.
_HOSTILE = "\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2K\x9b1A\u202e\u200b\U000e0041"


def _header(text: str) -> str:
    """``text`` as the UTF-8 bytes a server sends (http.server writes headers as latin-1)."""
    return text.encode().decode("latin-1")


def _ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(
        session_id="s",
        session_dir=tmp_path,
        workspace=tmp_path,
        cwd=str(tmp_path),
        settings={"webFetch": {"allowPrivateHosts": ["127.0.0.1"], "timeoutSeconds": 5}},
    )


def _inert(text: str) -> bool:
    """No character a terminal acts on or a person cannot see (a tab and spaces are fine)."""
    return all(c.isprintable() or c == "\t" for c in text)


async def _fetch(tool: WebFetchTool, url: str, ctx: ToolContext) -> str:
    out = await tool.call(WebFetchInput(url=url), ctx)
    return tool.render_result(out.data)


def test_a_cross_host_location_reaches_people_inert(tmp_path: Path) -> None:
    routes = {"/r": (302, {"Location": _header(f"http://other.example/x{_HOSTILE}")}, b"")}
    tool = WebFetchTool()
    with serve(routes) as srv:
        shown = anyio.run(_fetch, tool, f"http://127.0.0.1:{srv.server_port}/r", _ctx(tmp_path))
    assert shown.startswith("Redirect to http://other.example/x"), shown
    assert _inert(shown), repr(shown)


def test_a_same_host_location_with_controls_is_followed_and_shown_inert(tmp_path: Path) -> None:
    # A browser percent-encodes what a request line cannot hold; the server sees that path.
    routes = {
        "/r": (302, {"Location": _header(f"/ok{_HOSTILE}")}, b""),
        "/ok%1B]52;c;cm0gLXJmIH4=%07%1B[2K%C2%9B1A%E2%80%AE%E2%80%8B%F3%A0%81%81": (
            200,
            {"Content-Type": "text/plain"},
            b"landed",
        ),
    }
    tool = WebFetchTool()
    with serve(routes) as srv:
        shown = anyio.run(_fetch, tool, f"http://127.0.0.1:{srv.server_port}/r", _ctx(tmp_path))
    assert shown.startswith("Received 6 bytes (200)"), shown
    assert _inert(shown), repr(shown)


@pytest.mark.parametrize("path", ["/a\x1b[2Kb", "/a\x7fb", "/a\x00b"])
def test_a_url_httpx_refuses_is_the_tools_clear_error(tmp_path: Path, path: str) -> None:
    """Not ``httpx.InvalidURL`` out of the tool: a `ToolExecutionError` saying what to do, or a
    request made with the character percent-encoded."""
    routes = {"/r": (302, {"Location": path}, b"")}
    tool = WebFetchTool()
    with serve(routes) as srv:

        async def main() -> BaseException | str:
            try:
                return await _fetch(tool, f"http://127.0.0.1:{srv.server_port}/r", _ctx(tmp_path))
            except BaseException as exc:  # noqa: BLE001 - the type is what is judged
                return exc

        got = anyio.run(main)
    assert not isinstance(got, BaseException) or isinstance(got, ToolExecutionError), repr(got)
    assert _inert(str(got).replace("\n", " ")), repr(got)


def test_a_models_url_httpx_refuses_is_the_tools_clear_error(tmp_path: Path) -> None:
    tool = WebFetchTool()
    with serve({}) as srv:

        async def main() -> BaseException | str:
            try:
                return await _fetch(tool, f"http://127.0.0.1:{srv.server_port}/a\x1b[2Kb", _ctx(tmp_path))
            except BaseException as exc:  # noqa: BLE001 - the type is what is judged
                return exc

        got = anyio.run(main)
    assert isinstance(got, ToolExecutionError), repr(got)
    assert "call WebFetch again with a corrected url" in str(got)
