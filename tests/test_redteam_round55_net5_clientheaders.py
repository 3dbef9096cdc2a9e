"""Red team round 55 (net5): client-address and route headers round 20's list did not name.

Round 20 dropped the headers an application routes or trusts by (``X-Forwarded-*``,
``Forwarded``, ``X-Real-IP``, ``X-Original-URL`` ...), as a list of names. Fronts and frameworks
read more of them as the real client or the real request: ingress-nginx ``X-Original-Forwarded-For``,
Azure Front Door ``X-Azure-ClientIP``/``X-Azure-SocketIP``, Fly.io ``Fly-Client-IP``, CloudFront
``CloudFront-Viewer-Address``, App Engine ``X-Appengine-User-IP``, ``X-Originating-IP``,
``X-Remote-IP``/``X-Remote-Addr``, the legacy ``X-Forwarded``/``Forwarded-For``: through the vetted
request a command passed for a trusted client (``127.0.0.1``) of a listed host. The class is now
dropped by shape (a name holding ``forwarded``; ``x-original-*``/``x-rewrite-*``; one ending in an
address word). A real ``http.server`` on 127.0.0.1 (the listed ``localhost``) records what it gets.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._proxy_client import proxy_talk, running_proxy
from tests.test_redteam_round20_web_headers import _recorder, _via_socks

_CLAIMS = (
    "X-Original-Forwarded-For: 127.0.0.1",
    "X-Originating-IP: 127.0.0.1",
    "X-Remote-IP: 127.0.0.1",
    "X-Remote-Addr: 127.0.0.1",
    "Remote-Addr: 127.0.0.1",
    "Fly-Client-IP: 127.0.0.1",
    "X-Azure-ClientIP: 127.0.0.1",
    "X-Azure-SocketIP: 127.0.0.1",
    "CloudFront-Viewer-Address: 127.0.0.1:443",
    "X-Appengine-User-IP: 127.0.0.1",
    "X-Forwarded: for=127.0.0.1",
    "Forwarded-For: 127.0.0.1",
    "X-Original-Remote-Addr: 127.0.0.1",
    "X-Original-Forwarded-Host: secret.internal.test",
)


def _request(port: int, target: str) -> bytes:
    lines = [f"GET {target} HTTP/1.1", f"Host: localhost:{port}", "User-Agent: t", "X-Request-Id: 7",
             "Accept: */*", *_CLAIMS, "", ""]  # fmt: skip
    return "\r\n".join(lines).encode()


@pytest.mark.parametrize("way", ["forward", "connect", "socks5"])
def test_client_address_claims_do_not_pass(tmp_path: Path, way: str) -> None:
    with _recorder() as server, running_proxy(tmp_path, "localhost") as p:
        port = server.server_port
        if way == "forward":
            answer = proxy_talk(p, _request(port, f"http://localhost:{port}/page"))
        elif way == "connect":
            answer = proxy_talk(p, f"CONNECT localhost:{port} HTTP/1.1\r\n\r\n".encode(), _request(port, "/page"))
        else:
            answer = _via_socks(p.socket_path, port, _request(port, "/page"))
        assert b"200 OK" in answer and answer.endswith(b"ok"), answer[-300:]
        assert len(server.seen) == 1, server.seen
        names = {name for name, _ in server.seen[0]}
        passed = [h for h in _CLAIMS if h.split(":", 1)[0].lower() in names]
        assert not passed, f"forwarded to the host: {passed}"
        # The guard: ordinary headers still pass.
        for kept in (("user-agent", "t"), ("x-request-id", "7"), ("accept", "*/*")):
            assert kept in server.seen[0], server.seen[0]
