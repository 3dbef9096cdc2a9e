"""Red team round 15 (host-side consumers): allow-listed names that resolve to the host itself.

The filtering proxy and WebFetch run on the host. An exactly listed name (``--allow-domain
svc.example``, a trusted workspace's ``allowedDomains``, ``webFetch.allowPrivateHosts``) whose
DNS answered 127.0.0.1, 169.254.169.254, ``::ffff:127.0.0.1`` or one of the host's own
interface addresses was reached on *every* port: a command reached the host's own services
(``shellrt serve --http``, dockerd over tcp, Ray's dashboard, a database on loopback) and the
cloud metadata service, because a name was listed. And an address on one of the host's
interfaces that is public (a server with its public IP on ``eth0``) passed every check as
"public": WebFetch reached any port of the host itself, the proxy its ports 80 and 443.

Now an address of this machine (loopback, unspecified, link-local, metadata, any address of
its interfaces) is reached only when the operator listed that address (or, for loopback, the
name ``localhost``). DNS is outside the machine: answers come from a resolver hook
(``socket.getaddrinfo``, which the proxy's and WebFetch's lookups go through); the host's own
public address is made in a network namespace of its own (``unshare -rn``, 1.2.3.4 on lo).
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx  # noqa: F401 - WebFetch imports it lazily; imported here so a non-root run ships it
import pytest

from sandbox._hostaddr import is_host_address
from sandbox._proxy import FilteringProxy
from shellrt.protocol import ToolContext, ToolExecutionError
from shellrt.tools.web_fetch import WebFetchInput, WebFetchTool
from tests._http_server import _Server, serve
from tests._proxy_client import proxy_talk, running_proxy
from tests._public_netns import run_with_public_address

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def resolver(monkeypatch: pytest.MonkeyPatch) -> Callable[[str, str], None]:
    """Make the host's resolver answer ``name`` with ``address`` (what an attacker's DNS does)."""
    answers: dict[str, str] = {}
    real = socket.getaddrinfo

    def fake(host: object, port: object, *args: object, **kwargs: object) -> object:
        name = host.decode() if isinstance(host, bytes) else host  # anyio passes IDNA bytes
        if isinstance(name, str) and name in answers:
            address = answers[name]
            if ":" in address:
                return [(socket.AF_INET6, socket.SOCK_STREAM, 6, "", (address, int(str(port)), 0, 0))]
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, int(str(port))))]
        return real(host, port, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", fake)
    return answers.__setitem__


@pytest.fixture(scope="module")
def server() -> Iterator[_Server]:
    """A host service on 127.0.0.1 (what ``shellrt serve --http`` or a database is)."""
    with serve({"/": (200, {"Content-Type": "text/plain"}, b"host service")}) as srv:
        yield srv




def _socks(p: FilteringProxy, name: str, port: int) -> int:
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(10)
        s.connect(str(p.socket_path))
        s.sendall(b"\x05\x01\x00")
        assert s.recv(2) == b"\x05\x00"
        s.sendall(bytes([5, 1, 0, 3, len(name)]) + name.encode() + port.to_bytes(2, "big"))
        return s.recv(10)[1]


@pytest.mark.parametrize("answer", ["127.0.0.1", "::ffff:127.0.0.1", "127.0.0.2", "0.0.0.0"])
def test_an_exactly_listed_name_answering_loopback_does_not_reach_the_host(
    tmp_path: Path, server: _Server, resolver: Callable[[str, str], None], answer: str
) -> None:
    resolver("svc.example", answer)
    port = server.server_port
    before = server.hits["/"]
    with running_proxy(tmp_path, "svc.example") as p:
        connect = proxy_talk(p, f"CONNECT svc.example:{port} HTTP/1.1\r\n\r\n".encode())
        plain = proxy_talk(p, f"GET http://svc.example:{port}/ HTTP/1.1\r\n\r\n".encode())
        socks = _socks(p, "svc.example", port)
    assert connect.startswith(b"HTTP/1.1 403") and b"this machine" in connect, connect
    assert b"--allow-domain 127.0.0.1" in connect or answer != "127.0.0.1", connect
    assert plain.startswith(b"HTTP/1.1 403"), plain
    assert socks == 2
    assert server.hits["/"] == before, "the host's own service was reached through a listed name"


def test_the_metadata_service_is_not_reached_through_a_listed_name(
    tmp_path: Path, resolver: Callable[[str, str], None]
) -> None:
    resolver("meta.example", "169.254.169.254")
    resolver("meta6.example", "fd00:ec2::254")
    with running_proxy(tmp_path, "meta.example", "meta6.example") as p:
        for name in ("meta.example", "meta6.example"):
            out = proxy_talk(p, f"GET http://{name}/latest/meta-data/ HTTP/1.1\r\n\r\n".encode())
            assert out.startswith(b"HTTP/1.1 403") and b"this machine" in out, out
    log = [json.loads(line) for line in p.log_path.read_text().splitlines()] if p.log_path else []
    assert not [r for r in log if r.get("allowed")], log


def test_the_operator_listing_the_address_or_localhost_still_reaches_it(
    tmp_path: Path, server: _Server, resolver: Callable[[str, str], None]
) -> None:
    resolver("svc.example", "127.0.0.1")
    port = server.server_port
    with running_proxy(tmp_path, "svc.example", "127.0.0.1", "localhost") as p:
        by_name = proxy_talk(p, f"GET http://svc.example:{port}/ HTTP/1.1\r\n\r\n".encode())
        by_localhost = proxy_talk(p, f"GET http://localhost:{port}/ HTTP/1.1\r\n\r\n".encode())
    assert by_name.startswith(b"HTTP/1.0 200") and by_name.endswith(b"host service"), by_name
    assert by_localhost.startswith(b"HTTP/1.0 200"), by_localhost


def _ctx(tmp_path: Path, allow: Any) -> ToolContext:
    return ToolContext(
        session_id="s",
        session_dir=tmp_path,
        workspace=tmp_path,
        cwd=str(tmp_path),
        settings={"webFetch": {"allowPrivateHosts": allow}},
    )


def _fetch(tmp_path: Path, url: str, allow: Any) -> Any:
    async def go() -> Any:
        return (await WebFetchTool().call(WebFetchInput(url=url), _ctx(tmp_path, allow))).data

    return anyio.run(go)


def test_webfetch_a_private_host_listed_by_name_does_not_open_the_hosts_loopback(
    tmp_path: Path, server: _Server, resolver: Callable[[str, str], None]
) -> None:
    """``allowPrivateHosts: ["wiki.corp"]`` means that private host, not this machine's loopback."""
    resolver("wiki.corp", "127.0.0.1")
    port = server.server_port
    before = server.hits["/"]
    with pytest.raises(ToolExecutionError, match="this machine"):
        _fetch(tmp_path, f"http://wiki.corp:{port}/", ["wiki.corp"])
    assert server.hits["/"] == before
    # The address itself, a range holding it, `true`, or the name localhost: the operator's choice.
    for allow in (["127.0.0.1"], ["127.0.0.0/8"], True):
        assert _fetch(tmp_path, f"http://wiki.corp:{port}/", allow).status == 200
    assert _fetch(tmp_path, f"http://localhost:{port}/", ["localhost"]).status == 200


_OWN_PUBLIC = r"""
import json, socket, sys, threading
sys.path.insert(0, sys.argv[1])
from pathlib import Path
import anyio
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

real = socket.getaddrinfo
def fake(host, port, *args, **kwargs):
    # The resolver hook: DNS is outside the machine. web.example points at this host's public address.
    if host in ("web.example", b"web.example"):  # anyio passes IDNA bytes
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("1.2.3.4", int(port)))]
    return real(host, port, *args, **kwargs)
socket.getaddrinfo = fake

from sandbox._hostaddr import is_host_address
from sandbox._proxy import FilteringProxy
from shellrt.protocol import ToolContext, ToolExecutionError
from shellrt.tools.web_fetch import WebFetchInput, WebFetchTool

hits = []
class H(BaseHTTPRequestHandler):
    def do_GET(self):
        hits.append(self.server.server_address[1])
        self.send_response(200); self.send_header("Content-Length", "4"); self.end_headers()
        self.wfile.write(b"host")
    def log_message(self, *a):
        pass
for port in (80, 8080):  # the host's web server and, say, its dashboard, on every address
    srv = ThreadingHTTPServer(("0.0.0.0", port), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()

out = {"own": is_host_address("1.2.3.4"), "other": is_host_address("5.6.7.8")}
d = Path(sys.argv[2]); d.mkdir(mode=0o700, exist_ok=True)
p = FilteringProxy(d / "p.sock", allowed=("web.example", "*.example"))
p.start()
def talk(data):
    with socket.socket(socket.AF_UNIX) as c:
        c.settimeout(10)
        c.connect(str(p.socket_path))
        c.sendall(data)
        c.shutdown(socket.SHUT_WR)
        got = b""
        while chunk := c.recv(4096):
            got += chunk
    return got.decode("latin-1")
out["proxy_exact"] = talk(b"GET http://web.example/ HTTP/1.1\r\n\r\n")[:200]
out["proxy_wildcard"] = talk(b"CONNECT a.web.example:443 HTTP/1.1\r\n\r\n")[:200]
p.close()

ctx = ToolContext(session_id="s", session_dir=d, workspace=d, cwd=str(d), settings={})
async def fetch(url):
    try:
        return "FETCHED %d" % (await WebFetchTool().call(WebFetchInput(url=url), ctx)).data.status
    except ToolExecutionError as exc:
        return "REFUSED " + str(exc)[:300]
out["webfetch_name"] = anyio.run(fetch, "http://web.example:8080/")
out["webfetch_address"] = anyio.run(fetch, "http://1.2.3.4:8080/")
out["hits"] = hits
print("RESULT " + json.dumps(out))
"""


def test_the_hosts_own_public_address_is_not_reached(tmp_path: Path) -> None:
    """A public address on one of the host's interfaces is the host: neither WebFetch (any port)
    nor the proxy (80/443 through a listed or wildcard name) reaches it."""
    run = run_with_public_address(tmp_path, "own.py", _OWN_PUBLIC)
    out = json.loads(run.stdout.rsplit("RESULT ", 1)[1])
    assert out["own"] is True and out["other"] is False, out
    assert out["proxy_exact"].startswith("HTTP/1.1 403") and "this machine" in out["proxy_exact"], out
    assert out["proxy_wildcard"].startswith("HTTP/1.1 403"), out
    assert out["webfetch_name"].startswith("REFUSED") and "this machine" in out["webfetch_name"], out
    assert out["webfetch_address"].startswith("REFUSED"), out
    assert out["hits"] == [], out


def test_is_host_address_knows_the_hosts_own_addresses() -> None:
    """The kernel's answer, not a list: every address on this host's interfaces counts."""
    assert is_host_address("127.0.0.1") and is_host_address("::1") and is_host_address("::ffff:127.0.0.9")
    assert is_host_address("169.254.169.254") and is_host_address("0.0.0.0")
    assert not is_host_address("93.184.215.14") and not is_host_address("10.255.255.254")
    # The address this host reaches the outside with (if it has a route at all) is its own.
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.200", 9))
        except OSError:
            return
        assert is_host_address(s.getsockname()[0])
