"""Red team round 17 (web): domain fronting through a tunnel of the filtering proxy.

The proxy decides on the CONNECT (or SOCKS5) name and then piped the tunnel blindly. A host
that serves many names on one address (a CDN, an internal reverse proxy) picks the site by the
TLS SNI or the HTTP ``Host`` the *client* sends inside the tunnel: ``CONNECT allowed:443`` then
a ClientHello for ``other.example``, or ``CONNECT allowed:80`` then ``Host: other.example``,
reached a site the allow-list never named. Here the shared host is a server on 127.0.0.1
reached as the exactly listed ``localhost`` (which keeps every port); it records what arrives.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox._tunnel import client_hello_sni
from tests._proxy_client import running_proxy, tunnel_talk
from tests._public_netns import run_with_public_address
from tests._tcp_server import tcp_server

REPO = Path(__file__).resolve().parents[1]




@pytest.fixture
def shared_host() -> Iterator[tuple[int, list[bytes]]]:
    """A server on 127.0.0.1 that records the client's opening bytes (up to 2 s) and answers."""
    received: list[bytes] = []

    def answer(conn: socket.socket) -> None:
        conn.settimeout(2)
        data = b""
        try:
            while b"\r\n\r\n" not in data and len(data) < 65536 and (chunk := conn.recv(65536)):
                data += chunk
        except OSError:
            pass
        received.append(data)
        try:
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        except OSError:
            pass

    with tcp_server(answer) as port:
        yield port, received


def _client_hello(server_name: str | None) -> bytes:
    """The first flight a real TLS client (Python's ssl) sends for ``server_name`` (None: no SNI)."""
    ctx = ssl.create_default_context()
    if server_name is None:
        ctx.check_hostname = False
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    conn = ctx.wrap_bio(incoming, outgoing, server_hostname=server_name)
    with pytest.raises(ssl.SSLWantReadError):
        conn.do_handshake()
    return outgoing.read()




@pytest.mark.parametrize("socks", [False, True], ids=["connect", "socks5"])
def test_tls_for_another_name_does_not_reach_the_shared_host(
    tmp_path: Path, shared_host: tuple[int, list[bytes]], socks: bool
) -> None:
    port, received = shared_host
    with running_proxy(tmp_path, "localhost") as p:
        tunnel_talk(p, _client_hello("secret.internal.test"), port, socks=socks)
        assert not any(b"secret.internal.test" in r for r in received), (
            "a ClientHello for another name reached it"
        )
        assert any(r.host == "secret.internal.test" and "fronting" in r.reason for r in p.refusals), (
            p.refusals
        )
        # The listed name's own TLS still goes through, byte for byte.
        hello = _client_hello("localhost")
        tunnel_talk(p, hello, port, socks=socks)
        assert any(r.startswith(hello[:64]) for r in received), received
        # A hello naming no host chooses no site (the server's default): it passes.
        bare = _client_hello(None)
        tunnel_talk(p, bare, port, socks=socks)
        assert any(r.startswith(bare[:64]) for r in received), received


@pytest.mark.parametrize(
    "opening",
    [
        b"GET /admin HTTP/1.1\r\nHost: secret.internal.test\r\n\r\n",
        b"\r\nGET /admin HTTP/1.1\r\nhost:secret.internal.test\r\n\r\n",
        # A first request for the listed name, then a second one on the same connection.
        b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\nGET /admin HTTP/1.1\r\nHost: secret.internal.test\r\n\r\n",
    ],
    ids=["host", "leading-crlf", "keep-alive"],
)
def test_plain_http_in_a_tunnel_goes_to_the_listed_name_only(
    tmp_path: Path, shared_host: tuple[int, list[bytes]], opening: bytes
) -> None:
    port, received = shared_host
    with running_proxy(tmp_path, "localhost") as p:
        answer = tunnel_talk(p, opening, port)
    assert not any(b"secret.internal.test" in r for r in received), received
    # Sent at all, it was re-framed like the proxy's plain-HTTP forwarding: the vetted Host, one request.
    for r in received:
        assert f"Host: localhost:{port}\r\n".encode() in r, r
        assert r.count(b" HTTP/1.1\r\n") == 1, r
    assert answer, "the client got no answer"


def test_sni_parser_refuses_ambiguous_hellos() -> None:
    hello = _client_hello("localhost")
    assert client_hello_sni(hello) == "localhost"
    assert client_hello_sni(hello[:20]) is None  # incomplete: read more
    assert client_hello_sni(_client_hello(None)) == ""
    with pytest.raises(ValueError):
        client_hello_sni(b"\x16\x03\x01\x00\x05\x02\x00\x00\x01\x00")  # not a ClientHello


# -- a public address (a CDN's): in a network namespace of its own, the answer by a resolver hook --

_PUBLIC = r"""
import socket, ssl, sys, threading
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from sandbox._proxy import FilteringProxy

real = socket.getaddrinfo
def fake(host, port, *args, **kwargs):  # DNS is outside the machine: cdn.test answers 1.2.3.4
    if host == "cdn.test":
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("1.2.3.4", int(port)))]
    return real(host, port, *args, **kwargs)
socket.getaddrinfo = fake

received = []
server = socket.create_server(("1.2.3.4", 443))
def loop():
    while True:
        c, _ = server.accept()
        c.settimeout(2)
        data = b""
        try:
            while len(data) < 65536 and (chunk := c.recv(65536)):
                data += chunk
        except OSError:
            pass
        received.append(data)
        c.close()
threading.Thread(target=loop, daemon=True).start()

def hello(name):
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    conn = ssl.create_default_context().wrap_bio(incoming, outgoing, server_hostname=name)
    try:
        conn.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outgoing.read()

d = Path(sys.argv[2]); d.mkdir(mode=0o700, exist_ok=True)
# 1.2.3.4 is this namespace's own address: since round 15 only listing it opens it.
p = FilteringProxy(d / "p.sock", allowed=("cdn.test", "1.2.3.4"))
p.start()
for label, opening in [("other-sni", hello("other.test")), ("ssh", b"SSH-2.0-OpenSSH_9.6\r\n"),
                       ("binary", b"\x00\x00\x00\x08\x04\xd2\x16\x2f"), ("own-sni", hello("cdn.test"))]:
    with socket.socket(socket.AF_UNIX) as c:
        c.settimeout(10)
        c.connect(str(p.socket_path))
        c.sendall(b"CONNECT cdn.test:443 HTTP/1.1\r\n\r\n")
        head = b""
        while b"\r\n\r\n" not in head:
            head += c.recv(1)
        c.sendall(opening)
        c.shutdown(socket.SHUT_WR)
        while c.recv(4096):
            pass
    print("SENT", label, opening[:16].hex())
import time; time.sleep(0.5)
p.close()
for r in received:
    print("RECEIVED", r[:16].hex())
for r in p.refusals:
    print("REFUSED", r.host, r.reason)
"""


def test_a_public_host_gets_tls_for_its_own_name_or_http_only(tmp_path: Path) -> None:
    run = run_with_public_address(tmp_path, "public.py", _PUBLIC)
    sent = dict(line.split()[1:] for line in run.stdout.splitlines() if line.startswith("SENT"))
    received = [line.split()[1:] for line in run.stdout.splitlines() if line.startswith("RECEIVED")]
    received = [r[0] for r in received if r]  # a refused tunnel's connection got no byte at all
    # Only the ClientHello for the tunnel's own name reached the shared address.
    assert received == [sent["own-sni"]], run.stdout
    refused = run.stdout.count("REFUSED")
    assert refused == 3 and "REFUSED other.test" in run.stdout, run.stdout
