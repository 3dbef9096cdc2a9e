"""Red team round 55 (net5): a PROXY protocol preamble through a tunnel to a listed host.

To a listed non-public host (an internal service, ``localhost``) a tunnel's opening that is
neither TLS nor HTTP passes unread ("another protocol": a database, SSH). A load balancer or
reverse proxy that accepts the PROXY protocol (HAProxy ``accept-proxy``, nginx ``proxy_protocol``,
Traefik, Envoy) reads a first line ``PROXY TCP4 <client> <server> <ports>`` (or its binary v2
form) as who the client is -- the binary twin of ``X-Forwarded-For``, which the proxy drops
(round 20: a sandbox is no proxy in front of anyone) -- and then the TLS ClientHello, whose
SNI picks the site. Behind the preamble the hello went unread: a command passed for a trusted
client address and reached a site the allow-list never named (round 19's fronting to a listed
non-public host, by another door). Here the front is a server on 127.0.0.1 reached as the listed
``localhost``; it records what arrives.
"""

from __future__ import annotations

import socket
import ssl
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._proxy_client import drain, open_tunnel, running_proxy, tunnel_talk
from tests._tcp_server import tcp_server

#: The PROXY protocol v2 signature (12 bytes), then version 2 / PROXY, TCP over IPv4, 12 address bytes.
_V2 = (
    b"\r\n\r\n\x00\r\nQUIT\n"
    + b"\x21\x11\x00\x0c"
    + socket.inet_aton("10.0.0.1")
    + socket.inet_aton("127.0.0.1")
    + (1234).to_bytes(2, "big")
    + (443).to_bytes(2, "big")
)


@pytest.fixture
def front() -> Iterator[tuple[int, list[bytes]]]:
    """A server on 127.0.0.1 recording the client's opening (up to 2 s or 64 KiB)."""
    received: list[bytes] = []

    def record(conn: socket.socket) -> None:
        conn.settimeout(2)
        data = b""
        try:
            while len(data) < 65536 and (chunk := conn.recv(65536)):
                data += chunk
        except OSError:
            pass
        received.append(data)

    with tcp_server(record) as port:
        yield port, received


def _client_hello(server_name: str) -> bytes:
    ctx = ssl.create_default_context()
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    conn = ctx.wrap_bio(incoming, outgoing, server_hostname=server_name)
    with pytest.raises(ssl.SSLWantReadError):
        conn.do_handshake()
    return outgoing.read()


_PREAMBLES = {
    "v1": b"PROXY TCP4 10.0.0.1 127.0.0.1 1234 443\r\n",
    "v1-unknown": b"PROXY UNKNOWN\r\n",
    "v2": _V2,
    "v2-after-blank-lines": b"\r\n" + _V2,
}


@pytest.mark.parametrize("socks", [False, True], ids=["connect", "socks5"])
@pytest.mark.parametrize("preamble", sorted(_PREAMBLES))
def test_a_proxy_protocol_preamble_does_not_reach_a_listed_host(
    tmp_path: Path, front: tuple[int, list[bytes]], preamble: str, socks: bool
) -> None:
    port, received = front
    with running_proxy(tmp_path, "localhost") as p:
        tunnel_talk(p, _PREAMBLES[preamble] + _client_hello("secret.internal.test"), port, socks=socks)
        assert not any(b"secret.internal.test" in r or b"QUIT" in r or b"PROXY" in r for r in received), (
            "a PROXY protocol preamble (and the hello behind it) reached the listed host"
        )
        assert any("PROXY protocol" in r.reason for r in p.refusals), p.refusals


@pytest.mark.parametrize("preamble", ["v1", "v2"])
def test_a_preamble_sent_a_byte_at_a_time_is_refused_too(
    tmp_path: Path, front: tuple[int, list[bytes]], preamble: str
) -> None:
    """The verdict waits for the bytes that decide it: ``\r\n\r\n\x00`` alone is no verdict."""
    port, received = front
    opening = _PREAMBLES[preamble]
    with running_proxy(tmp_path, "localhost") as p:
        s = open_tunnel(p, port)
        try:  # the proxy may end the tunnel as soon as the bytes it read decide
            for byte in opening[:16]:
                s.sendall(bytes([byte]))
                time.sleep(0.005)
            s.sendall(opening[16:] + _client_hello("secret.internal.test"))
        except OSError:
            pass
        drain(s)
        assert not any(b"secret.internal.test" in r for r in received), received
        assert any("PROXY protocol" in r.reason for r in p.refusals), p.refusals


def test_other_protocols_still_pass_to_a_listed_host(tmp_path: Path, front: tuple[int, list[bytes]]) -> None:
    """The guard: another protocol's opening (here a line that merely holds the word) passes as before."""
    port, received = front
    with running_proxy(tmp_path, "localhost") as p:
        tunnel_talk(p, b"HELO PROXY.example\r\n", port)
        assert received == [b"HELO PROXY.example\r\n"], received
        assert not p.refusals, p.refusals
