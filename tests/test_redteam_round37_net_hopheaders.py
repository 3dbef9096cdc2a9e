"""Red team round 37 (net): headers a client names in ``Connection`` went upstream.

RFC 9110 7.6.1: an intermediary MUST remove every header the ``Connection`` field names (they
are this hop's, not the request's). The proxy dropped its own list of hop-by-hop headers but
forwarded the ones a client named (``Connection: close, X-Hop`` sent ``X-Hop`` on), so the
upstream saw a request other than the one the client meant for it (and a front that strips them
would have seen less than the proxy forwarded). Now named headers are dropped too, and naming a
framing header (``Content-Length``, ``Transfer-Encoding``) or ``Host`` is refused (400): the proxy
frames and names the request itself. A recording server on 127.0.0.1 (``localhost`` listed).
"""

from __future__ import annotations

from pathlib import Path

from tests._proxy_client import proxy_talk, running_proxy
from tests.test_redteam_round27_net_proxy import upstream  # noqa: F401 (the recording server fixture)
from tests.test_redteam_round35_net_smuggle import _settled


def test_headers_named_in_connection_are_not_forwarded(
    tmp_path: Path,
    upstream: tuple[int, list[bytes]],  # noqa: F811 (the imported fixture)
) -> None:
    port, received = upstream
    with running_proxy(tmp_path, "localhost") as p:
        ok = proxy_talk(
            p,
            f"GET http://localhost:{port}/a HTTP/1.1\r\nConnection: close, X-Hop\r\nX-Hop: 1\r\n"
            "X-Kept: 2\r\nConnection: x-other\r\nX-Other: 3\r\n\r\n".encode(),
        )
        framing = proxy_talk(
            p,
            f"POST http://localhost:{port}/b HTTP/1.1\r\nContent-Length: 3\r\nConnection: Content-Length\r\n\r\nabc".encode(),
        )
    received = _settled(received, 1)
    assert ok.startswith(b"HTTP/1.1 200"), ok[:200]
    assert len(received) == 1, received
    head = received[0].lower()
    assert b"x-hop" not in head and b"x-other" not in head and b"x-kept: 2" in head, received[0]
    assert framing.startswith(b"HTTP/1.1 400") and b"Connection" in framing, framing[:300]
