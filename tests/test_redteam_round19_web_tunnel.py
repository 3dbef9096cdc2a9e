"""Red team round 19 (web): plain HTTP inside a proxy tunnel that the proxy did not take for HTTP.

Round 17 re-frames a tunnel's plain-HTTP opening for the vetted host, and passes "another
protocol" unread to a host the operator listed by name at a non-public address (an internal
reverse proxy, ``localhost``). What counted as another protocol: a first line holding one byte
no request line holds. Real servers are more lenient than that: Python's ``http.server`` splits
the request line on any whitespace (``\\x0b``, ``\\x0c``, ``\\x1c``-``\\x1f``, ``\\x85``,
``\\xa0``) and, like nginx, takes bytes past 0x7f in the path. Such a request, with the
``Host`` of a site no one listed, reached the shared host unread. Here the shared host is a real
``http.server`` on 127.0.0.1 reached as the exactly listed ``localhost``; it records each
request's ``Host``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox._tunnel import HeadScan, looks_like_http
from tests._http_server import serve
from tests._proxy_client import running_proxy, tunnel_talk

SECRET = "secret.internal.test"




_HOST = f"Host: {SECRET}\r\n\r\n".encode()


@pytest.mark.parametrize(
    "opening",
    [
        b"GET /caf\xe9 HTTP/1.1\r\n" + _HOST,  # a byte past 0x7f in the path (nginx, http.server take it)
        b"GET\x0b/\x0bHTTP/1.1\r\n" + _HOST,  # vertical tab: whitespace to str.split()
        b"GET\x0c/ HTTP/1.1\r\n" + _HOST,  # form feed
        b"GET\x1f/ HTTP/1.1\r\n" + _HOST,  # unit separator: whitespace to str.split() too
        b"GET\xa0/ HTTP/1.1\r\n" + _HOST,  # no-break space, latin-1: whitespace to str.split()
        b"GET /\x01 HTTP/1.1\r\n" + _HOST,  # a control byte in the path
        b"\x0bGET / HTTP/1.1\r\n" + _HOST,  # leading whitespace str.split() drops
        b"\x85\x0c GET / HTTP/1.1\r\n" + _HOST,
    ],
    ids=["high-byte-path", "vt", "ff", "us", "nbsp", "control-in-path", "leading-vt", "leading-nel-ff"],
)
@pytest.mark.parametrize("socks", [False, True], ids=["connect", "socks5"])
def test_a_lenient_request_line_does_not_front_another_site(
    tmp_path: Path, opening: bytes, socks: bool
) -> None:
    with serve({}) as server, running_proxy(tmp_path, "localhost") as p:
        tunnel_talk(p, opening, server.server_port, socks=socks)
        # Sent at all, it went re-framed with the vetted Host; refused, it is on the record.
        assert SECRET not in server.hosts, server.hosts
        assert all(h == f"localhost:{server.server_port}" for h in server.hosts), server.hosts
        assert server.hosts or p.refusals, "neither forwarded nor refused"
        # The listed name's own request still goes through the same tunnel kind.
        answer = tunnel_talk(p, b"GET /ok HTTP/1.1\r\nHost: localhost\r\n\r\n", server.server_port, socks=socks)
        assert answer.startswith(b"HTTP/1.0 404") or answer.startswith(b"HTTP/1.1 404"), answer
        assert server.hosts[-1] == f"localhost:{server.server_port}", server.hosts


@pytest.mark.parametrize(
    "opening",
    [
        b"\x00\x00\x00\x08\x04\xd2\x16\x2f",  # PostgreSQL's SSLRequest: binary from its first byte
        b"J\x00\x00\x00\x01\x02",  # a length-prefixed frame whose first byte is a letter
        b"SSH-2.0-OpenSSH_9.6\r\n",  # a text line that is no request
    ],
    ids=["postgres", "letter-then-binary", "ssh"],
)
def test_other_protocols_to_a_listed_private_host_still_pass_at_once(opening: bytes) -> None:
    """The fix waits for a line's end only where a lenient server could still read a request."""
    scan = HeadScan()
    assert scan.feed(opening) is False


@pytest.mark.parametrize(
    "opening",
    [
        b"GET /caf\xe9 HTTP/1.1\r\n",
        b"GET\x0b/\x0bHTTP/1.1\r\n",
        b"\x0bGET / HTTP/1.1\r\n",  # its first byte alone is no verdict (round 18's lesson for TLS)
        b"\x1c\x1cPOST\x85/ HTTP/1.0\r\n",
        b"GET /\x01 x\r\n",
        b"J\x00\x00\r\n",
        b"\x0b\x00binary\r\n",
    ],
)
def test_the_scan_in_pieces_judges_as_the_whole_line_does(opening: bytes) -> None:
    scan = HeadScan()
    verdict = None
    for i in range(len(opening)):
        verdict = scan.feed(opening[i : i + 1])
        if verdict is False:
            break
    assert verdict == looks_like_http(opening)
