"""Red team round 27 (net): the filtering proxy of ``--allow-domain``, attacked afresh as a hostile
command would, host tricks first. Every server is a real one on 127.0.0.1; only DNS (outside the
machine) is a hook on ``socket.getaddrinfo``, which the proxy's resolver goes through.

``localhost`` is listed (the operator's explicit choice of the host's loopback), so a request
that gets through reaches the recording server; ``allowed.example`` is listed by name and
``*.wild.example`` through a wildcard, their DNS answers chosen per test.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from sandbox._proxy import FilteringProxy
from tests._proxy_client import drain, open_tunnel, proxy_talk, running_proxy
from tests._public_netns import run_with_public_address
from tests._tcp_server import tcp_server

ALLOWED = ("localhost", "allowed.example", "*.wild.example")


@pytest.fixture
def upstream() -> Iterator[tuple[int, list[bytes]]]:
    """A server on 127.0.0.1 that records every byte a connection sent it and answers 200."""
    received: list[bytes] = []

    def answer(conn: socket.socket) -> None:
        conn.settimeout(1)
        data = b""
        try:
            while b"\r\n\r\n" not in data and (chunk := conn.recv(4096)):
                data += chunk
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
            conn.shutdown(socket.SHUT_WR)
            while chunk := conn.recv(4096):  # whatever the client sends after (pipelined, smuggled)
                data += chunk
        except OSError:
            pass
        received.append(data)

    with tcp_server(answer) as port:
        yield port, received


@pytest.fixture
def dns(monkeypatch: pytest.MonkeyPatch) -> Callable[[str, list[str]], list[str]]:
    """``dns(name, [addresses, ...])``: what the next lookups of ``name`` answer (one address per
    lookup, the last repeated: an answer that changes between check and connect); returns the
    names looked up, in order."""
    answers: dict[str, list[str]] = {}
    asked: list[str] = []
    real = socket.getaddrinfo

    def fake(host: object, port: object, *args: object, **kwargs: object) -> object:
        name = host.decode() if isinstance(host, bytes) else str(host)
        asked.append(name)
        queue = answers.get(name)
        if queue is None:
            if name == "localhost":
                return real(host, port, *args, **kwargs)  # type: ignore[arg-type]
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        address = queue.pop(0) if len(queue) > 1 else queue[0]
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        sockaddr = (address, int(port), 0, 0) if family == socket.AF_INET6 else (address, int(port))  # type: ignore[call-overload]
        return [(family, socket.SOCK_STREAM, 6, "", sockaddr)]

    def set_answers(name: str, addresses: list[str]) -> list[str]:
        answers[name] = list(addresses)
        return asked

    monkeypatch.setattr(socket, "getaddrinfo", fake)
    return set_answers


def _connect_status(p: FilteringProxy, target: str) -> bytes:
    return proxy_talk(p, f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())


def test_host_spellings_never_reach_another_host(
    tmp_path: Path, upstream: tuple[int, list[bytes]], dns: Callable[[str, list[str]], list[str]]
) -> None:
    port, received = upstream
    # A listed name whose DNS points at this machine, in every spelling of loopback and metadata.
    for name, address in [
        ("allowed.example", "127.0.0.1"),
        ("a.wild.example", "127.0.0.2"),
        ("b.wild.example", "169.254.169.254"),
        ("c.wild.example", "::ffff:127.0.0.1"),
        ("d.wild.example", "::1"),
        ("e.wild.example", "0.0.0.0"),
        ("f.wild.example", "10.0.0.1"),
    ]:
        dns(name, [address])
    with running_proxy(tmp_path, *ALLOWED, head_timeout=5) as p:
        targets = [
            f"127.0.0.1:{port}",  # IP literal
            f"[::1]:{port}",
            f"[::ffff:127.0.0.1]:{port}",
            f"2130706433:{port}",  # a number getaddrinfo reads as 127.0.0.1
            f"0x7f.1:{port}",
            f"allowed.example:{port}",  # listed, DNS -> 127.0.0.1
            f"allowed.example.:{port}",
            f"ALLOWED.example:{port}",
            f"a.wild.example:{port}",
            f"b.wild.example:{port}",
            f"c.wild.example:{port}",
            f"d.wild.example:{port}",
            f"e.wild.example:{port}",
            f"f.wild.example:{port}",
            f"allowed.example.evil.test:{port}",
            f"xn--llowed-9nf.example:{port}",  # a punycode twin
            f"\u0430llowed.example:{port}",  # Cyrillic a, sent as UTF-8
            f"allowed%2eexample:{port}",
            f"localhost%00.evil.test:{port}",
            f"evil.test@localhost:{port}",  # userinfo in a CONNECT target
            f"localhost:{port}@evil.test",
            f"localhost:{port}:443",
        ]
        answers = {t: _connect_status(p, t) for t in targets}
        # Plain HTTP: userinfo, a percent-encoded host, a backslash.
        forwards = {
            u: proxy_talk(p, f"GET {u} HTTP/1.1\r\nHost: localhost:{port}\r\n\r\n".encode())
            for u in [
                f"http://localhost:{port}@evil.test/",
                f"http://localhost%3a{port}/",
                f"http://evil.test\\@localhost:{port}/",
                f"http://[::1]:{port}/",
                f"http://127.1:{port}/",
            ]
        }
    bad = {
        t: a[:40]
        for t, a in {**answers, **forwards}.items()
        if not a.startswith((b"HTTP/1.1 403", b"HTTP/1.1 400"))
    }
    assert not bad, bad
    assert received == [], received


def test_port_rule_holds_for_every_spelling(
    tmp_path: Path, dns: Callable[[str, list[str]], list[str]]
) -> None:
    dns("allowed.example", ["93.184.216.34"])  # public (TEST-NET would be refused as private)
    with running_proxy(tmp_path, *ALLOWED, head_timeout=5) as p:
        for target in (
            "allowed.example:22",
            "allowed.example.:22",
            "ALLOWED.EXAMPLE:25",
            "allowed.example:0022",
        ):
            out = _connect_status(p, target)
            assert out.startswith(b"HTTP/1.1 403") and b"only ports 80 and 443" in out, (target, out[:200])
        socks = socket.socket(socket.AF_UNIX)
        socks.settimeout(5)
        socks.connect(str(p.socket_path))
        socks.sendall(b"\x05\x01\x00\x05\x01\x00\x03\x10allowed.example." + (22).to_bytes(2, "big"))
        reply = b""
        while len(reply) < 12 and (chunk := socks.recv(12)):
            reply += chunk
        socks.close()
    assert reply[:4] == b"\x05\x00\x05\x02", reply  # SOCKS5: connection not allowed by ruleset


def test_one_vetted_request_per_connection(
    tmp_path: Path, upstream: tuple[int, list[bytes]], dns: Callable[[str, list[str]], list[str]]
) -> None:
    port, received = upstream
    asked = dns("unused.example", ["127.0.0.1"])
    with running_proxy(tmp_path, *ALLOWED, head_timeout=5) as p:
        # Absolute form whose Host header (and routing headers) name another host.
        fronted = proxy_talk(
            p,
            f"GET http://localhost:{port}/a HTTP/1.1\r\nHost: evil.test\r\nX-Forwarded-Host: evil.test\r\n\r\n".encode(),
        )
        # Pipelining: an allowed request, then one to another host on the same connection.
        pipelined = proxy_talk(
            p,
            f"GET http://localhost:{port}/b HTTP/1.1\r\n\r\nGET http://evil.test/ HTTP/1.1\r\nHost: evil.test\r\n\r\n".encode(),
        )
        # Smuggling: Content-Length beside Transfer-Encoding, and two lengths.
        smuggled = [
            proxy_talk(
                p,
                f"POST http://localhost:{port}/ HTTP/1.1\r\n{h}\r\n\r\n0\r\n\r\nGET /x HTTP/1.1\r\n\r\n".encode(),
            )
            for h in (
                "Content-Length: 4\r\nTransfer-Encoding: chunked",
                "Transfer-Encoding : chunked",
                "Content-Length: 0\r\nContent-Length: 40",
                "Content-Length: 4, 40",
            )
        ]
        # A WebSocket upgrade: the upgrade is not forwarded, the connection ends with the answer.
        upgraded = proxy_talk(
            p,
            f"GET http://localhost:{port}/ws HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n".encode(),
        )
        # The same inside a CONNECT tunnel to the listed host: re-framed, one request only.
        with open_tunnel(p, port) as s:
            s.sendall(
                b"GET /t HTTP/1.1\r\nHost: evil.test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
                b"GET http://evil.test/ HTTP/1.1\r\nHost: evil.test\r\n\r\n"
            )
            tunnelled = drain(s)
    assert fronted.startswith(b"HTTP/1.1 200") and pipelined.startswith(b"HTTP/1.1 200"), (fronted, pipelined)
    assert upgraded.startswith(b"HTTP/1.1 200") and tunnelled.startswith(b"HTTP/1.1 200"), (
        upgraded,
        tunnelled,
    )
    assert all(s.startswith((b"HTTP/1.1 400", b"HTTP/1.1 501")) for s in smuggled), smuggled
    # The upstream records a connection once it ended (what came after its answer counts), so the
    # tunnel's answer can reach us first (CI112 read 3 under load): wait for four, then a moment
    # more for any fifth.
    deadline = time.monotonic() + 10
    while len(received) < 4 and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.3)
    assert len(received) == 4, received  # fronted, pipelined, upgraded, tunnelled: nothing else
    for data in received:
        assert data.count(b"HTTP/1.1\r\n") == 1, data  # one request each, nothing behind it
        text = data.decode("latin-1").lower()
        assert "evil.test" not in text and "upgrade" not in text.replace("connection: close", ""), data
        assert f"host: localhost:{port}\r\n" in text and "connection: close" in text, data
    assert "evil.test" not in asked  # the pipelined second host was never even looked up


def test_an_answer_that_changes_is_looked_up_once_and_the_vetted_address_used(
    tmp_path: Path, upstream: tuple[int, list[bytes]], dns: Callable[[str, list[str]], list[str]]
) -> None:
    port, received = upstream
    # First answer public (93.184.216.34, port refused: nothing connects), then loopback: rebinding
    # between a check and a connect would reach the host. A private-but-not-host answer first:
    asked = dns("g.wild.example", ["10.1.2.3", "127.0.0.1"])
    with running_proxy(tmp_path, *ALLOWED, head_timeout=5) as p:
        out = _connect_status(p, f"g.wild.example:{port}")
        again = _connect_status(p, f"g.wild.example:{port}")
    assert out.startswith(b"HTTP/1.1 403") and again.startswith(b"HTTP/1.1 403"), (out, again)
    assert asked.count("g.wild.example") == 2  # one lookup per connection, none after the check
    assert received == []


# -- a denied address behind an allowed name -------------------------------------------------------

_DENIED = r"""
import socket, sys
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from sandbox._proxy import FilteringProxy

real = socket.getaddrinfo
ANSWERS = {"api.example": "10.9.8.7", "v6.example": "::ffff:10.9.8.7", "nat.example": "64:ff9b::a09:807"}
def fake(host, port, *args, **kwargs):  # the resolver hook: DNS is outside the machine
    address = ANSWERS.get(host)
    if address is None:
        return real(host, port, *args, **kwargs)
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sockaddr = (address, int(port), 0, 0) if ":" in address else (address, int(port))
    return [(family, socket.SOCK_STREAM, 6, "", sockaddr)]
socket.getaddrinfo = fake

d = Path(sys.argv[2]); d.mkdir(mode=0o700, exist_ok=True)
p = FilteringProxy(d / "p.sock", allowed=tuple(ANSWERS), denied=("10.9.8.7",))
p.start()
for name in ANSWERS:
    with socket.socket(socket.AF_UNIX) as c:
        c.settimeout(10)
        c.connect(str(p.socket_path))
        c.sendall(f"CONNECT {name}:443 HTTP/1.1\r\n\r\n".encode())
        out = b""
        while chunk := c.recv(4096):
            out += chunk
    print(name, out.split(b"\r\n", 1)[0].decode(), "|", out.rsplit(b"\r\n\r\n", 1)[-1][:160])
p.close()
"""


def test_a_denied_address_is_not_reached_through_an_allowed_name(tmp_path: Path) -> None:
    # In a network namespace of its own (nothing leaves the machine): 10.9.8.7 is no address of
    # it, so an attempt to reach it fails at once (502) where a refusal answers 403.
    run = run_with_public_address(tmp_path, "denied.py", _DENIED)
    lines = run.stdout.splitlines()
    assert len(lines) == 3, run.stdout
    for line in lines:
        assert "HTTP/1.1 403" in line and "deny-list" in line, run.stdout
