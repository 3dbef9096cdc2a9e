"""Red team round 37 (net): a redirect whose Location httpx cannot parse escaped WebFetch raw.

httpx builds the next request of every 3xx answer, even with ``follow_redirects=False``, and a
Location it cannot parse (``data:text/plain,hi``, ``http://[::1``, ``http://a b/``) raised
``httpx.InvalidURL``: not an ``httpx.HTTPError``, so it left WebFetch as an exception of the
library's own, not the tool's answer (``http://[::1/`` later raised ``ValueError`` in WebFetch's own
``urljoin``). Now httpx never sees a Location (a response hook keeps it aside): WebFetch judges it
as written and hands back what it does not follow. A hostile web server on 127.0.0.1 answers each.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from shellrt.protocol import ToolContext
from shellrt.tools.web_fetch import WebFetchInput, WebFetchTool
from tests._http_server import serve

_LOCATIONS = ["data:text/plain,hi", "http://[::1/", "https://exa mple.org/"]


@pytest.mark.parametrize("location", _LOCATIONS)
def test_an_unparseable_location_is_a_clear_error(tmp_path: Path, location: str) -> None:
    routes = {"/r": (302, {"Location": location}, b"")}
    ctx = ToolContext(
        session_id="s",
        session_dir=tmp_path,
        workspace=tmp_path,
        cwd=str(tmp_path),
        settings={"webFetch": {"allowPrivateHosts": ["127.0.0.1"], "timeoutSeconds": 5}},
    )
    with serve(routes) as srv:

        async def main() -> BaseException | None:
            try:
                await WebFetchTool().call(WebFetchInput(url=f"http://127.0.0.1:{srv.server_port}/r"), ctx)
            except BaseException as exc:  # noqa: BLE001 - the type is what is judged
                return exc
            return None

        raised = anyio.run(main)
    assert raised is None, repr(raised)  # handed back as written (not followed), or followed: no error
