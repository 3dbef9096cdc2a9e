"""Red team round 18 (web): what a tunnel's TLS client can still say past the round-17 SNI check.

Round 17 reads the first ClientHello and pipes the rest. Here the shared host (a server on
127.0.0.1 reached as the exactly listed ``localhost``, as in round 17's tests) answers a
HelloRetryRequest, and the client's second hello names another site; or the first hello hides
its name (Encrypted Client Hello), carries it in an entry of another type, or carries a second
hello in its own record; or comes in 1-byte records, which cost the proxy's loop quadratic time.
A public address (its own network namespace, as in round 17) must not speak first to a client
that sends nothing (SSH on 443).
"""

from __future__ import annotations

import os
import socket
import ssl
import struct
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from sandbox._proxy import FilteringProxy
from tests._proxy_client import drain, open_tunnel, running_proxy
from tests._public_netns import run_with_public_address
from tests._tcp_server import tcp_server

REPO = Path(__file__).resolve().parents[1]
SECRET = b"secret.internal.test"
#: ServerHello.random of a HelloRetryRequest (RFC 8446, 4.1.3).
RETRY_RANDOM = bytes.fromhex("cf21ad74e59a6111be1d8c021e65b891c2a211167abb8c5e079e09e2c8a8339c")
CCS = b"\x14\x03\x03\x00\x01\x01"


@contextmanager
def _proxy(tmp_path: Path, head_timeout: float = 30.0) -> Iterator[FilteringProxy]:
    with running_proxy(tmp_path, "localhost", head_timeout=head_timeout) as p:
        yield p


def _record(handshake: bytes) -> bytes:
    return b"\x16\x03\x01" + struct.pack(">H", len(handshake)) + handshake


def _client_hello(server_name: str) -> bytes:
    """The first flight Python's ssl sends for ``server_name`` (one record)."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    conn = ssl.create_default_context().wrap_bio(incoming, outgoing, server_hostname=server_name)
    with pytest.raises(ssl.SSLWantReadError):
        conn.do_handshake()
    return outgoing.read()


def _raw_hello(*extensions: tuple[int, bytes], pad: int = 0) -> bytes:
    """A minimal ClientHello handshake message (no record) with ``extensions`` (and padding)."""
    if pad:
        extensions += ((21, b"\x00" * pad),)
    ext = b"".join(struct.pack(">HH", kind, len(v)) + v for kind, v in extensions)
    body = b"\x03\x03" + os.urandom(32) + b"\x00" + b"\x00\x02\x13\x01" + b"\x01\x00"
    body += struct.pack(">H", len(ext)) + ext
    return b"\x01" + len(body).to_bytes(3, "big") + body


def _sni(*entries: tuple[int, bytes]) -> tuple[int, bytes]:
    names = b"".join(bytes([kind]) + struct.pack(">H", len(n)) + n for kind, n in entries)
    return 0, struct.pack(">H", len(names)) + names


def _retry_request() -> bytes:
    ext = b"\x00\x2b\x00\x02\x03\x04"  # supported_versions: TLS 1.3
    body = b"\x03\x03" + RETRY_RANDOM + b"\x00" + b"\x13\x01" + b"\x00" + struct.pack(">H", len(ext)) + ext
    handshake = b"\x02" + len(body).to_bytes(3, "big") + body
    return b"\x16\x03\x03" + struct.pack(">H", len(handshake)) + handshake


@pytest.fixture
def retrying_host() -> Iterator[tuple[int, list[bytes]]]:
    """A TLS 1.3 server stand-in on 127.0.0.1: answers the first flight with a HelloRetryRequest
    and records every byte the client sends (until it ends, at most 3 s)."""
    received: list[bytes] = []
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            with conn:
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

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield int(listener.getsockname()[1]), received
    finally:
        stop.set()
        thread.join(5)
        listener.close()


@pytest.fixture
def sink() -> Iterator[tuple[int, list[bytes]]]:
    """A server on 127.0.0.1 that records all a client sends until it ends or pauses 1 s once it
    began (up to 10 s for the first bytes: the proxy holds a paced opening until it is whole,
    which took over 1 s under load)."""
    received: list[bytes] = []

    def record(conn: socket.socket) -> None:
        conn.settimeout(10)
        data = b""
        try:
            while chunk := conn.recv(65536):
                conn.settimeout(1)
                data += chunk
        except OSError:
            pass
        received.append(data)

    with tcp_server(record) as port:
        yield port, received




def _wait_for(received: list[bytes], count: int) -> None:
    deadline = time.monotonic() + 10
    while len(received) < count and time.monotonic() < deadline:
        time.sleep(0.05)


@pytest.mark.parametrize("early", [False, True], ids=["after-retry", "sent-ahead"])
def test_the_second_hello_after_a_retry_must_name_the_tunnels_host(
    tmp_path: Path, retrying_host: tuple[int, list[bytes]], early: bool
) -> None:
    port, received = retrying_host
    sent = []
    with _proxy(tmp_path) as p:
        for name, count in (("secret.internal.test", 1), ("localhost", 2)):
            first, second = _client_hello("localhost"), CCS + _client_hello(name)
            sent.append(first + second)
            s = open_tunnel(p, port)
            if early:  # sent before any answer: the proxy must hold it until the server answered
                s.sendall(first + second)
            else:
                s.sendall(first)
                assert RETRY_RANDOM in s.recv(65536)
                s.sendall(second)
            drain(s)
            _wait_for(received, count)
        refusals = list(p.refusals)
    assert len(received) == 2, received
    assert SECRET not in received[0], "a second ClientHello for another name reached the shared host"
    assert any(r.host == SECRET.decode() and "HelloRetryRequest" in r.reason for r in refusals), refusals
    # The listed name's own second hello still goes through, byte for byte.
    assert received[1] == sent[1]


@pytest.mark.parametrize(
    "hello",
    [
        # Encrypted Client Hello: the outer name is the tunnel's, the front routes by the inner one.
        _record(_raw_hello(_sni((0, b"localhost")), (0xFE0D, b"\x00\x00\x01\x00\x01\x07" + SECRET))),
        _record(_raw_hello(_sni((0, b"localhost")), (0xFFCE, SECRET))),  # ESNI (draft)
        # A name of another type first: a lenient server takes the first entry's name.
        _record(_raw_hello(_sni((2, SECRET), (0, b"localhost")))),
        # A second ClientHello in the first one's record (a server reads it after its retry).
        _record(_raw_hello(_sni((0, b"localhost"))) + _raw_hello(_sni((0, SECRET)))),
    ],
    ids=["ech", "esni", "other-name-type", "hello-after-hello"],
)
def test_hellos_that_hide_or_double_the_name_are_refused(
    tmp_path: Path, retrying_host: tuple[int, list[bytes]], hello: bytes
) -> None:
    port, received = retrying_host
    with _proxy(tmp_path) as p:
        s = open_tunnel(p, port)
        s.sendall(hello)
        drain(s)
        _wait_for(received, 1)
        refusals = list(p.refusals)
    assert not any(SECRET in r for r in received), "a hello carrying another name reached the shared host"
    assert refusals and "ClientHello" in refusals[0].reason, refusals


def test_a_hello_whose_first_byte_comes_alone_is_still_read(
    tmp_path: Path, retrying_host: tuple[int, list[bytes]]
) -> None:
    """One byte (0x16) is not yet TLS and held no line: it was judged another protocol, and to a
    listed host the whole tunnel was piped unread, the SNI check skipped."""
    port, received = retrying_host
    hello = _client_hello("secret.internal.test")
    with _proxy(tmp_path) as p:
        s = open_tunnel(p, port)
        s.sendall(hello[:1])
        time.sleep(0.3)
        s.sendall(hello[1:])
        drain(s)
        _wait_for(received, 1)
        refusals = list(p.refusals)
    assert not any(SECRET in r for r in received), "a ClientHello for another name reached the shared host"
    assert [r.host for r in refusals] == [SECRET.decode()], refusals


def _proxy_cpu(p: FilteringProxy) -> float:
    thread = p._thread
    assert thread is not None and thread.ident is not None
    return time.clock_gettime(time.pthread_getcpuclockid(thread.ident))


def _paced_cost(p: FilteringProxy, port: int, head: bytes, paced: bytes, pieces: int = 400) -> float:
    """Proxy CPU seconds for a tunnel whose client sends ``head`` at once, then ``paced`` in
    ``pieces`` writes 2 ms apart (each its own read)."""
    before = _proxy_cpu(p)
    s = open_tunnel(p, port)
    if head:
        s.sendall(head)
    step = -(-len(paced) // pieces)
    for at in range(0, len(paced), step):
        s.sendall(paced[at : at + step])
        time.sleep(0.002)
    drain(s)
    return _proxy_cpu(p) - before


@pytest.mark.parametrize("kind", ["tls", "http"])
def test_an_opening_in_small_pieces_costs_the_proxy_what_relaying_them_does(
    tmp_path: Path, sink: tuple[int, list[bytes]], kind: str
) -> None:
    """A 60 KB opening (a 10 KB hello in 1-byte records; an HTTP head with one long header) sent
    in 400 paced pieces: each read re-parsed all read so far (quadratic; for TLS a Python loop
    per record). Baseline, in the same run: the same bytes relayed as an accepted request's body."""
    port, received = sink
    if kind == "tls":
        hello = _raw_hello(_sni((0, SECRET)), pad=10_000)
        opening = b"".join(b"\x16\x03\x01\x00\x01" + bytes([b]) for b in hello)
    else:
        opening = b"GET / HTTP/1.1\r\nX-Pad: " + b"a" * 60_000 + b"\r\n\r\n"
    relay = b"POST / HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % len(opening)
    with _proxy(tmp_path, head_timeout=60) as p:
        relayed = _paced_cost(p, port, relay, b"x" * len(opening))
        opened = _paced_cost(p, port, b"", opening)
        refusals = list(p.refusals)
    if kind == "tls":  # judged, as fronting
        assert [r.host for r in refusals] == [SECRET.decode()], refusals
    else:  # passed, re-framed
        _wait_for(received, 2)
        assert not refusals and any(b"X-Pad: aaa" in r for r in received), refusals
    assert opened < 3 * relayed + 0.02, (
        f"proxy CPU: relaying {relayed:.3f} s, reading the opening {opened:.3f} s"
    )


# -- a public address that speaks first (SSH on 443): its own network namespace, as in round 17 --

_PUBLIC = r"""
import socket, sys, threading, time
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from sandbox._proxy import FilteringProxy
from tests._tcp_server import tcp_server

real = socket.getaddrinfo
def fake(host, port, *args, **kwargs):  # DNS is outside the machine: cdn.test answers 1.2.3.4
    if host == "cdn.test":
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("1.2.3.4", int(port)))]
    return real(host, port, *args, **kwargs)
socket.getaddrinfo = fake

server = socket.create_server(("1.2.3.4", 443))
def loop():
    while True:
        c, _ = server.accept()
        c.sendall(b"SSH-2.0-OpenSSH_9.6 banner from a public host\r\n")
        time.sleep(5)
        c.close()
threading.Thread(target=loop, daemon=True).start()

d = Path(sys.argv[2]); d.mkdir(mode=0o700, exist_ok=True)
p = FilteringProxy(d / "p.sock", allowed=("cdn.test", "1.2.3.4"), head_timeout=1.5)
p.start()
with socket.socket(socket.AF_UNIX) as c:
    c.settimeout(8)
    c.connect(str(p.socket_path))
    c.sendall(b"CONNECT cdn.test:443 HTTP/1.1\r\n\r\n")
    head = b""
    while b"\r\n\r\n" not in head:
        head += c.recv(1)
    got = b""
    try:
        while chunk := c.recv(4096):
            got += chunk
    except OSError:
        pass
print("GOT", got.hex() or "-")
p.close()
for r in p.refusals:
    print("REFUSED", r.host, r.reason)
"""


def test_a_public_host_does_not_speak_first_into_a_tunnel(tmp_path: Path) -> None:
    run = run_with_public_address(tmp_path, "public.py", _PUBLIC)
    assert "GOT -" in run.stdout, f"the public host's banner reached the client: {run.stdout}"
    assert "REFUSED cdn.test the tunnel's opening did not arrive in time" in run.stdout, run.stdout
