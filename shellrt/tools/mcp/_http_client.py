"""The HTTP client of one MCP server: its configured headers go to its own origin only.

A server's ``headers`` (``Authorization``, an API key under any name) are configured for
its URL. httpx drops only ``Authorization`` when a redirect leaves the origin, and MCP SDKs
before 2.x follow every redirect: a server, or anything on its path, answering ``307
Location: https://elsewhere/`` got the other headers sent there. Every request whose
scheme, host or port differs from the configured URL's is sent without them, whatever
follows the redirect (the SDK, httpx, a later version of either).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

__all__ = ["mcp_http_client", "origin_of"]

_DEFAULT_PORTS = {"http": 80, "https": 443}


def origin_of(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of ``url``, the port filled in for http and https."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").lower(), parts.port or _DEFAULT_PORTS.get(scheme, 0)


def mcp_http_client(url: str, headers: dict[str, str], refused: list[Exception] | None = None) -> Any:
    """The SDK's client (its recommended timeouts) sending ``headers`` to ``url``'s origin only;
    an answer it refuses (too long, compressed) is noted in ``refused``."""
    from mcp.shared._httpx_utils import create_mcp_http_client

    from shellrt.tools.mcp._http_bounds import bound_answers

    client = create_mcp_http_client(headers=headers or None)
    bound_answers(client, refused=refused)  # its answers: no longer than a stdio server's line (round 39)
    if not headers:
        return client
    home = origin_of(url)
    names = {name.lower() for name in headers}

    async def keep_headers_home(request: Any) -> None:
        if origin_of(str(request.url)) != home:
            for name in list(request.headers):
                if name.lower() in names:
                    del request.headers[name]

    hooks = dict(client.event_hooks)
    hooks["request"] = [*hooks.get("request", []), keep_headers_home]
    client.event_hooks = hooks
    return client
