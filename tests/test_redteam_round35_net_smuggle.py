"""Red team round 35 (net): bytes no HTTP message may hold, forwarded by the filtering proxy.

The proxy re-frames each plain-HTTP request (forwarded, or the opening of a CONNECT tunnel) for
the vetted host, and what it forwards is what the upstream parses: a NUL or another control byte
in a header value, or whitespace and controls in the request target, are read differently by
different servers (RFC 9110 5.5: a recipient MUST reject or replace CR, LF and NUL; RFC 9112 3.2:
the target holds no whitespace), so the proxy's view (one request, the vetted Host) need not be the
upstream's. They are refused (400) before anything is sent; non-ASCII bytes of the target are
percent-encoded. A real recording server on 127.0.0.1 (round 27's; ``localhost`` is listed).
"""

from __future__ import annotations

import time
from pathlib import Path

from tests._proxy_client import proxy_talk, running_proxy, tunnel_talk
from tests.test_redteam_round27_net_proxy import upstream  # noqa: F401 (the recording server fixture)


def _settled(received: list[bytes], count: int) -> list[bytes]:
    """``received`` once the server has recorded ``count`` connections (its one thread lags)."""
    deadline = time.monotonic() + 3
    while len(received) < count and time.monotonic() < deadline:
        time.sleep(0.01)
    return received


def test_control_bytes_in_a_forwarded_request_are_refused(
    tmp_path: Path,
    upstream: tuple[int, list[bytes]],  # noqa: F811 (the imported fixture)
) -> None:
    port, received = upstream
    url = f"http://localhost:{port}"
    bad_heads = [
        f"GET {url}/ HTTP/1.1\r\nX-A: a\x00smuggle\r\n\r\n",  # NUL in a value
        f"GET {url}/ HTTP/1.1\r\nX-A: a\x0bHost: smuggle.test\r\n\r\n",  # a line break to str.splitlines
        f"GET {url}/ HTTP/1.1\r\nX-A: a\x0cHost: smuggle.test\r\n\r\n",
        f"GET {url}/ HTTP/1.1\r\nX-A: a\x01smuggle\x7f\r\n\r\n",  # other controls, DEL
        f"GET {url}/a\x00smuggle HTTP/1.1\r\n\r\n",  # NUL in the target
        f"GET {url}/a\tHTTP/1.1\x0bHost:smuggle.test HTTP/1.1\r\n\r\n",  # whitespace in the target
        # Framing headers spelt with '_' (CGI, WSGI and some servers read it as '-'): CL+TE again.
        f"POST {url}/ HTTP/1.1\r\nContent-Length: 5\r\nTransfer_Encoding: chunked\r\nX: smuggle\r\n\r\n0\r\n\r\n",
        f"POST {url}/ HTTP/1.1\r\nContent_Length: 5\r\nX: smuggle\r\n\r\n",
    ]
    tunnel_openings = [
        b"GET / HTTP/1.1\r\nX-A: a\x00smuggle\r\n\r\n",
        b"GET /a\x0bHTTP/1.1\x0bHost:smuggle.test HTTP/1.1\r\n\r\n",
    ]
    with running_proxy(tmp_path, "localhost", head_timeout=5) as p:
        answers = [proxy_talk(p, head.encode("latin-1")) for head in bad_heads]
        answers += [tunnel_talk(p, opening, port) for opening in tunnel_openings]
        # Controls: UTF-8 in a value (\xc3\x85 is \u00c5) and in the target still go through.
        clean = proxy_talk(p, f"GET {url}/ok HTTP/1.1\r\nX-A: \xc3\x85sa\tok\r\n\r\n".encode("latin-1"))
        utf8 = proxy_talk(p, f"GET {url}/caf\xc3\xa9 HTTP/1.1\r\n\r\n".encode("latin-1"))
    forwarded = [a for a in answers if not a.startswith(b"HTTP/1.1 400")]
    assert not forwarded, f"{len(forwarded)} of {len(answers)} bad requests were not refused: {forwarded}"
    seen = _settled(received, len(tunnel_openings) + 2)
    assert not any(b"smuggle" in data for data in seen), seen
    assert clean.endswith(b"ok") and utf8.endswith(b"ok"), (clean, utf8)
    assert any(data.startswith(b"GET /ok HTTP/1.1\r\n") and b"X-A: \xc3\x85sa\tok\r\n" in data for data in seen)
    assert any(data.startswith(b"GET /caf%C3%A9 HTTP/1.1\r\n") for data in seen), seen


def test_a_forwarded_request_carries_the_vetted_host(
    tmp_path: Path,
    upstream: tuple[int, list[bytes]],  # noqa: F811 (the imported fixture)
) -> None:
    """The Host sent upstream is the name the proxy vetted, in its canonical spelling, as inside
    a tunnel (round 17): not the client's (``LOCALHOST..``, a trailing dot, userinfo), which a
    shared front may route to a site of its own (another tenant, its default site)."""
    port, received = upstream
    spellings = [f"LOCALHOST..:{port}", f"user@LocalHost.:{port}", f"localhost:{port}"]
    with running_proxy(tmp_path, "localhost", head_timeout=5) as p:
        answers = [proxy_talk(p, f"GET http://{a}/x HTTP/1.1\r\nHost: a\r\n\r\n".encode()) for a in spellings]
    assert all(a.endswith(b"ok") for a in answers), answers
    hosts = [
        line for data in _settled(received, 3) for line in data.split(b"\r\n") if line.startswith(b"Host:")
    ]
    assert hosts == [f"Host: localhost:{port}".encode()] * 3, hosts
