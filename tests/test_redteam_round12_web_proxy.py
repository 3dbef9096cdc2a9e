"""Red team round 12 (web and proxy): the filtering proxy of ``--allow-domain``.

Two holes, and the attacks that already held kept as regressions:

* a port or ``Content-Length`` written in non-ASCII digits (``localhost:²``, Latin-1
  superscripts pass ``str.isdigit`` and fail ``int``) crashed the connection's task:
  no answer for the client, no refusal recorded, and a traceback on the host's stderr
  for every such connection (the sandbox writes to the operator's terminal without
  the refusal cap);
* the port rule (a public address only on 80/443) was judged over all of a name's
  DNS answers at once: an exactly listed name whose answers mixed a public and a
  private address reached the public one on any port (SSH, SMTP...). Proven in a
  network namespace of its own (``unshare -rn``) where a global address (1.2.3.4)
  sits on loopback, with the answers given by a resolver hook (DNS is outside the
  machine).
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests._proxy_client import proxy_talk, running_proxy
from tests._public_netns import run_with_public_address
from tests._tcp_server import tcp_server

REPO = Path(__file__).resolve().parents[1]




@pytest.fixture
def upstream() -> Iterator[tuple[int, list[bytes]]]:
    """A TCP server on 127.0.0.1 that records what reaches it and answers 200."""
    received: list[bytes] = []

    def answer(conn: socket.socket) -> None:
        conn.settimeout(2)
        data = b""
        try:
            while b"\r\n\r\n" not in data and (chunk := conn.recv(4096)):
                data += chunk
        except OSError:
            pass
        received.append(data)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")

    with tcp_server(answer) as port:
        yield port, received


@pytest.mark.parametrize(
    "request_head",
    [
        "CONNECT localhost:\u00b2 HTTP/1.1\r\n\r\n",
        "GET http://localhost:\u00b3/ HTTP/1.1\r\n\r\n",
        "GET http://localhost:{port}/ HTTP/1.1\r\nContent-Length: \u00b9\r\n\r\nx",
        "POST http://localhost:{port}/ HTTP/1.1\r\nContent-Length: 0\u00b9\r\n\r\nx",
    ],
)
def test_non_ascii_digits_get_a_400_not_a_crash(
    tmp_path: Path,
    upstream: tuple[int, list[bytes]],
    caplog: pytest.LogCaptureFixture,
    request_head: str,
) -> None:
    port, received = upstream
    with caplog.at_level(logging.ERROR), running_proxy(tmp_path, "localhost") as p:
        out = proxy_talk(p, request_head.replace("{port}", str(port)).encode("latin-1"))
        # The proxy still serves the next client.
        again = proxy_talk(p, f"GET http://localhost:{port}/ HTTP/1.1\r\n\r\n".encode())
    assert out.startswith(b"HTTP/1.1 400"), out
    assert b"port" in out or b"Content-Length" in out, out
    assert again.startswith(b"HTTP/1.1 200"), again
    assert len(received) == 1  # only the well-formed request went upstream
    assert not [r for r in caplog.records if "Unhandled exception" in r.getMessage() or r.exc_info], [
        r.getMessage() for r in caplog.records
    ]


# -- held: regressions of attacks that did not get through -----------------------------------


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1", "[::1]", "[::ffff:127.0.0.1]", "0.0.0.0", "2130706433", "0x7f000001", "0177.0.0.1",
     "127.1", "LOCALHOST.evil", "localhost%00", "[::ffff:7f00:1]", "169.254.169.254"],
)  # fmt: skip
def test_ip_spellings_never_pass_as_the_listed_name(
    tmp_path: Path, upstream: tuple[int, list[bytes]], host: str
) -> None:
    port, received = upstream
    with running_proxy(tmp_path, "localhost") as p:
        plain = proxy_talk(p, f"GET http://{host}:{port}/ HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
        tunnel = proxy_talk(p, f"CONNECT {host}:{port} HTTP/1.1\r\nHost: localhost:{port}\r\n\r\n".encode())
    assert plain.startswith((b"HTTP/1.1 403", b"HTTP/1.1 400")), plain
    assert tunnel.startswith((b"HTTP/1.1 403", b"HTTP/1.1 400")), tunnel
    assert received == []


def test_userinfo_and_host_header_do_not_choose_the_upstream(
    tmp_path: Path, upstream: tuple[int, list[bytes]]
) -> None:
    """``http://localhost@127.0.0.1/`` is 127.0.0.1 (refused); a Host header never picks the target."""
    port, received = upstream
    with running_proxy(tmp_path, "localhost") as p:
        out = proxy_talk(p, f"GET http://localhost@127.0.0.1:{port}/ HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
        ok = proxy_talk(p, f"GET http://127.0.0.1@localhost:{port}/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
    assert out.startswith(b"HTTP/1.1 403"), out
    assert ok.startswith(b"HTTP/1.1 200"), ok
    [request] = received
    assert f"Host: localhost:{port}".encode() in request and b"127.0.0.1" not in request, request


# -- the port rule, per address ------------------------------------------------------------------

_MIXED = r"""
import socket, sys, threading
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from typing import Any
from sandbox._proxy import FilteringProxy

real = socket.getaddrinfo
def fake(host, port, *args, **kwargs):
    # The resolver hook: DNS is outside the machine. A name whose answers mix a public and a private address.
    if host == "mixed.test":
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("1.2.3.4", int(port))),
                (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", int(port)))]
    return real(host, port, *args, **kwargs)
socket.getaddrinfo = fake

reached = []
def serve(address):
    s = socket.create_server((address, 2222))
    def loop():
        while True:
            c, _ = s.accept()
            reached.append(address)
            c.sendall(b"hello from " + address.encode())
            c.close()
    threading.Thread(target=loop, daemon=True).start()
serve("1.2.3.4")
serve("127.0.0.1")

d = Path(sys.argv[2]); d.mkdir(mode=0o700, exist_ok=True)
# Both answers are this namespace's own addresses: since round 15 only listing them opens them.
p = FilteringProxy(d / "p.sock", allowed=("mixed.test", "1.2.3.4", "127.0.0.1"))
p.start()
with socket.socket(socket.AF_UNIX) as c:
    c.settimeout(10)
    c.connect(str(p.socket_path))
    c.sendall(b"CONNECT mixed.test:2222 HTTP/1.1\r\n\r\n")
    out = b""
    while chunk := c.recv(4096):
        out += chunk
p.close()
print(repr(out))
print("REACHED", ",".join(reached))
"""


def test_a_public_answer_is_reached_on_web_ports_only_whatever_the_other_answers(tmp_path: Path) -> None:
    run = run_with_public_address(tmp_path, "mixed.py", _MIXED)
    reached = run.stdout.rsplit("REACHED ", 1)[1].strip()
    assert "1.2.3.4" not in reached, run.stdout
    # The listed name's private answer (a host service the operator named) keeps every port.
    assert reached == "127.0.0.1", run.stdout
    assert "hello from 127.0.0.1" in run.stdout


def test_a_wildcard_name_resolving_to_a_private_address_is_refused_over_socks5h_and_connect(
    tmp_path: Path, upstream: tuple[int, list[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``*.corp.test`` is allowed; ``db.corp.test`` answers 127.0.0.1 (a resolver hook: DNS is
    outside the machine). Only an exactly listed name may reach a private address."""
    port, received = upstream
    real = socket.getaddrinfo

    def hook(host: Any, port_: Any, *args: Any, **kwargs: Any) -> Any:
        if host == "db.corp.test":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", int(port_)))]
        return real(host, port_, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", hook)
    with running_proxy(tmp_path, "*.corp.test") as p:
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(10)
            s.connect(str(p.socket_path))
            s.sendall(b"\x05\x01\x00")
            assert s.recv(2) == b"\x05\x00"
            name = b"db.corp.test"
            s.sendall(b"\x05\x01\x00\x03" + bytes([len(name)]) + name + port.to_bytes(2, "big"))
            reply = s.recv(10)
        tunnel = proxy_talk(p, f"CONNECT db.corp.test:{port} HTTP/1.1\r\n\r\n".encode())
        reasons = [r.reason for r in p.refusals]
    assert reply[:2] == b"\x05\x02", reply
    assert tunnel.startswith(b"HTTP/1.1 403") and b"private address" in tunnel, tunnel
    assert received == []
    assert len(reasons) == 2 and all("listed exactly" in r for r in reasons), reasons
