"""Red team round 29 (iface): a page of any other local web server was an allowed origin.

``serve --http`` on loopback checks Host and Origin (DNS rebinding, round 27). The origins allowed
were ``http://localhost:*``, ``http://127.0.0.1:*`` and ``http://[::1]:*``: any port, so a page
served by another local server (a hostile repository's dev server on ``localhost:3000``, a local
web app with an injection) was taken for the server's own (measured: ``initialize`` with ``Origin:
http://localhost:3000`` got ``200`` from a ``--no-auth`` server). Today a browser still needs a
preflight shellrt does not answer for a JSON body; the origin check is the layer that must not
rely on it. Non-browser clients send no Origin and are unchanged. Checked with the SDK's own
validator on the settings ``serve_http`` uses.
"""

from __future__ import annotations

import pytest
from mcp.server.transport_security import TransportSecurityMiddleware
from starlette.requests import Request

from shellrt.server.mcp import loopback_security

pytestmark = pytest.mark.anyio


async def _status(host: str, port: int, origin: str | None) -> int:
    settings = loopback_security(host, port)
    assert settings is not None
    headers = [(b"host", f"{host}:{port}".encode()), (b"content-type", b"application/json")]
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    refused = await TransportSecurityMiddleware(settings).validate_request(
        Request({"type": "http", "method": "POST", "headers": headers}), is_post=True
    )
    return 200 if refused is None else refused.status_code


async def test_only_the_servers_own_origin_is_allowed() -> None:
    got = {
        origin: await _status("127.0.0.1", 8765, origin)
        for origin in (
            None,
            "http://127.0.0.1:8765",
            "http://localhost:8765",
            "http://localhost:3000",
            "http://127.0.0.1:8766",
            "http://[::1]:80",
        )
    }
    assert got == {
        None: 200,
        "http://127.0.0.1:8765": 200,
        "http://localhost:8765": 200,
        "http://localhost:3000": 403,
        "http://127.0.0.1:8766": 403,
        "http://[::1]:80": 403,
    }, got
    assert loopback_security("0.0.0.0", 8765) is None  # not loopback: --allow-remote, the token guards it
