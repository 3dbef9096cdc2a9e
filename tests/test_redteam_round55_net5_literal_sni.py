"""Red team round 55 (net5): a denied name fronted through a tunnel to a listed IP literal.

An IP literal on the allow-list takes any TLS name (round 17: "an address the operator listed:
every name it serves"), but a deny beats any allow. A shared front at a listed address (a CDN
edge, an internal reverse proxy) picks the site by the ClientHello's SNI, so ``CONNECT
<listed address>:443`` with a hello for a name on the deny-list reached that denied site: the
deny-list's names are judged on the CONNECT name and on what they resolve to now, and a wildcard
deny (``*.secret.test``) resolves to nothing. Here the shared front is a server on 127.0.0.1
(listed as such) that records what arrives.
"""

from __future__ import annotations

import socket
import ssl
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox._proxy import FilteringProxy
from tests._proxy_client import drain, running_proxy
from tests._tcp_server import tcp_server


@pytest.fixture
def shared_front() -> Iterator[tuple[int, list[bytes]]]:
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
    """The first flight Python's ssl sends for ``server_name`` (its SNI)."""
    ctx = ssl.create_default_context()
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    conn = ctx.wrap_bio(incoming, outgoing, server_hostname=server_name)
    with pytest.raises(ssl.SSLWantReadError):
        conn.do_handshake()
    return outgoing.read()


def _through_literal(p: FilteringProxy, port: int, opening: bytes, *, socks: bool) -> None:
    """Open a tunnel to ``127.0.0.1:port`` (CONNECT or SOCKS5), send ``opening``, read to the end."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    s.connect(str(p.socket_path))
    if socks:
        s.sendall(b"\x05\x01\x00")
        assert s.recv(2) == b"\x05\x00"
        s.sendall(b"\x05\x01\x00\x01" + socket.inet_aton("127.0.0.1") + struct.pack(">H", port))
        assert s.recv(10)[:2] == b"\x05\x00"
    else:
        s.sendall(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head and (chunk := s.recv(1)):
            head += chunk
        assert head.startswith(b"HTTP/1.1 200"), head
    s.sendall(opening)
    drain(s)


@pytest.mark.parametrize("socks", [False, True], ids=["connect", "socks5"])
@pytest.mark.parametrize("sni", ["x.secret.test", "SECRET.test.", "deep.x.secret.test"])
def test_a_denied_sni_does_not_pass_a_listed_address(
    tmp_path: Path, shared_front: tuple[int, list[bytes]], sni: str, socks: bool
) -> None:
    port, received = shared_front
    with running_proxy(tmp_path, "127.0.0.1", denied=("*.secret.test", "secret.test")) as p:
        _through_literal(p, port, _client_hello(sni), socks=socks)
        name = sni.lower().rstrip(".").encode()
        assert not any(name in r.lower() for r in received), (
            f"a ClientHello for the denied {sni} reached the listed address"
        )
        refusal = next((r for r in p.refusals if r.host.lower().rstrip(".") == name.decode()), None)
        assert refusal is not None and refusal.remedy == "denied", p.refusals


def test_an_unreadable_sni_does_not_pass_a_listed_address(
    tmp_path: Path, shared_front: tuple[int, list[bytes]]
) -> None:
    """A name the proxy cannot read as one (a NUL inside) is no name it can judge: refused, as a
    front that cuts it at the NUL would pick the denied site."""
    port, received = shared_front
    hello = _client_hello("x.secret.test.aaaa")
    forged = hello.replace(b"x.secret.test.aaaa", b"x.secret.test\x00aaaa")
    with running_proxy(tmp_path, "127.0.0.1", denied=("*.secret.test",)) as p:
        _through_literal(p, port, forged, socks=False)
        assert not any(b"x.secret.test" in r for r in received), "an unreadable SNI reached the listed address"
        assert any("fronting" in r.reason or "name" in r.reason for r in p.refusals), p.refusals


def test_other_names_still_pass_a_listed_address(
    tmp_path: Path, shared_front: tuple[int, list[bytes]]
) -> None:
    """The guard: a listed address still takes every name the deny-list does not name."""
    port, received = shared_front
    with running_proxy(tmp_path, "127.0.0.1", denied=("*.secret.test",)) as p:
        _through_literal(p, port, _client_hello("www.public.test"), socks=False)
        assert any(b"www.public.test" in r for r in received), received
        assert not p.refusals, p.refusals


#: ServerHello.random of a TLS 1.3 HelloRetryRequest (RFC 8446, 4.1.3).
_RETRY_RANDOM = bytes.fromhex("cf21ad74e59a6111be1d8c021e65b891c2a211167abb8c5e079e09e2c8a8339c")
_CCS = b"\x14\x03\x03\x00\x01\x01"


def _retry_request() -> bytes:
    ext = b"\x00\x2b\x00\x02\x03\x04"  # supported_versions: TLS 1.3
    body = b"\x03\x03" + _RETRY_RANDOM + b"\x00\x13\x01\x00" + struct.pack(">H", len(ext)) + ext
    handshake = b"\x02" + len(body).to_bytes(3, "big") + body
    return b"\x16\x03\x03" + struct.pack(">H", len(handshake)) + handshake


@pytest.fixture
def retrying_front() -> Iterator[tuple[int, list[bytes]]]:
    """A TLS 1.3 front on 127.0.0.1: answers the first record with a HelloRetryRequest and
    records all the client sends (up to 3 s)."""
    received: list[bytes] = []

    def serve(conn: socket.socket) -> None:
        conn.settimeout(3)
        data = b""
        try:
            while len(data) < 5 or len(data) < 5 + int.from_bytes(data[3:5], "big"):
                chunk = conn.recv(65536)
                if not chunk:
                    break
                data += chunk
            conn.sendall(_retry_request())
            while chunk := conn.recv(65536):
                data += chunk
        except OSError:
            pass
        received.append(data)

    with tcp_server(serve) as port:
        yield port, received


def test_a_second_hello_after_a_retry_does_not_name_a_denied_name(
    tmp_path: Path, retrying_front: tuple[int, list[bytes]]
) -> None:
    """The second ClientHello a HelloRetryRequest asks for must name what the first did through a
    listed address too (round 18 checked it only in tunnels to names)."""
    port, received = retrying_front
    with running_proxy(tmp_path, "127.0.0.1", denied=("*.secret.test",)) as p:
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(10)
        s.connect(str(p.socket_path))
        s.sendall(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head and (chunk := s.recv(1)):
            head += chunk
        assert head.startswith(b"HTTP/1.1 200"), head
        s.sendall(_client_hello("www.public.test"))
        assert _RETRY_RANDOM in s.recv(65536)
        try:
            s.sendall(_CCS + _client_hello("x.secret.test"))
        except OSError:
            pass
        drain(s)
        deadline = time.monotonic() + 5
        while not received and time.monotonic() < deadline:
            time.sleep(0.05)
        assert received and b"www.public.test" in received[0], received
        assert b"x.secret.test" not in received[0], "the second hello for a denied name passed"
        assert any("HelloRetryRequest" in r.reason for r in p.refusals), p.refusals
