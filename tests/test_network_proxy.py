"""Network mode ``proxied``: the filtering proxy and the bwrap sandbox that reaches out only through it.

Loopback only: every server is on 127.0.0.1; ``localhost`` is the name the
operator allows explicitly (the host's loopback), ``127.0.0.1`` the IP literal
the proxy refuses. The pip end-to-end test is tests/test_network_pip.py.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import shutil
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox import BackendUnavailableError, BwrapConfig, SandboxPolicy
from sandbox._proxy import FilteringProxy, decide
from sandbox.bwrap import BwrapBackend, _reachable
from shellrt.supervisor import Supervisor
from tests._proxy_client import proxy_talk
from tests._tcp_server import tcp_server
from tests.conftest import require

BODY = b"hello from the host\n"


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        if self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "http://blocked.invalid/")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture
def web() -> Iterator[int]:
    """A plain HTTP server on the host's 127.0.0.1; yields its port."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def echo() -> Iterator[int]:
    """A TCP echo server on 127.0.0.1 (what a TLS server looks like to a CONNECT tunnel)."""

    def answer(conn: socket.socket) -> None:
        while data := conn.recv(4096):
            conn.sendall(data)

    with tcp_server(answer) as port:
        yield port


@pytest.fixture
def proxy(tmp_path: Path) -> Iterator[FilteringProxy]:
    d = tmp_path / "proxy"
    d.mkdir(mode=0o700)
    p = FilteringProxy(d / "proxy.sock", allowed=("localhost",), denied=(), log_path=d / "network.log")
    p.start()
    try:
        yield p
    finally:
        p.close()


# -- decisions -------------------------------------------------------------------------
def test_decide_deny_wins_and_wildcards_match_subdomains_only() -> None:
    allowed, denied = ("*.example.org", "pypi.org"), ("bad.example.org",)
    assert decide("files.example.org", allowed, denied) is None
    assert decide("PyPI.org.", allowed, denied) is None
    assert decide("example.org", allowed, denied) is not None  # the wildcard is its subdomains
    assert decide("bad.example.org", allowed, denied) == "denied by the session's network deny-list"
    assert decide("evil-example.org", allowed, denied) is not None
    assert decide("10.0.0.1", allowed, denied) == "IP addresses are refused unless listed"
    assert decide("10.0.0.1", ("10.0.0.1",), ()) is None


def test_policy_validates_domains(tmp_path: Path) -> None:
    p = SandboxPolicy(workspace=tmp_path, network="proxied", allowed_domains=("PyPI.org.", "*.X.org"))
    assert p.allowed_domains == ("pypi.org", "*.x.org")
    for bad in ("http://pypi.org", "pypi.org:443", "*", "a b"):
        with pytest.raises(ValueError, match="not a domain name"):
            SandboxPolicy(workspace=tmp_path, network="proxied", allowed_domains=(bad,))


# -- the proxy, from the host ------------------------------------------------------------
def test_plain_http_to_an_allowed_name(proxy: FilteringProxy, web: int) -> None:
    out = proxy_talk(proxy, f"GET http://localhost:{web}/ HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
    assert out.startswith(b"HTTP/1.0 200") and out.endswith(BODY)
    assert proxy.refusals == []


def test_ip_literal_refused_with_403_body_and_logged(proxy: FilteringProxy, web: int) -> None:
    out = proxy_talk(proxy, f"GET http://127.0.0.1:{web}/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
    assert out.startswith(b"HTTP/1.1 403")
    assert b"blocked 127.0.0.1" in out and b"--allow-domain 127.0.0.1" in out
    assert [(r.host, r.port) for r in proxy.refusals] == [("127.0.0.1", web)]
    assert proxy.log_path is not None
    record = json.loads(proxy.log_path.read_text().splitlines()[-1])
    assert record["host"] == "127.0.0.1" and record["port"] == web and record["time"] > 0


def test_unlisted_name_refused(proxy: FilteringProxy) -> None:
    out = proxy_talk(proxy, b"CONNECT registry.invalid:443 HTTP/1.1\r\nHost: registry.invalid:443\r\n\r\n")
    assert out.startswith(b"HTTP/1.1 403") and b"--allow-domain registry.invalid" in out
    assert proxy.refusals[-1].host == "registry.invalid"


def test_refused_name_is_made_printable(proxy: FilteringProxy) -> None:
    """A sandbox cannot write terminal escapes to the operator's stderr through a host name."""
    out = proxy_talk(proxy, b"CONNECT \x1b]0;pwned\x07.invalid:443 HTTP/1.1\r\n\r\n")
    assert out.startswith(b"HTTP/1.1 403")
    assert proxy.refusals[-1].host.isprintable() and "\x1b" not in proxy.refusals[-1].host


def test_wildcard_does_not_open_loopback(tmp_path: Path, web: int) -> None:
    """A name resolving to loopback passes only when listed exactly, not through ``*.``."""
    try:
        socket.getaddrinfo("a.localhost", web)
    except OSError:
        pytest.skip("this resolver does not map *.localhost to loopback (systemd-resolved does)")
    p = FilteringProxy(tmp_path / "p.sock", allowed=("*.localhost",))
    p.start()
    try:
        out = proxy_talk(p, f"GET http://a.localhost:{web}/ HTTP/1.1\r\n\r\n".encode())
    finally:
        p.close()
    assert out.startswith(b"HTTP/1.1 403") and b"loopback" in out


def test_connect_tunnel(proxy: FilteringProxy, echo: int) -> None:
    out = proxy_talk(proxy, f"CONNECT localhost:{echo} HTTP/1.1\r\n\r\n".encode(), then=b"ping over tls\n")
    assert out == b"ping over tls\n"


def test_socks5_domain_connect_and_refusal(proxy: FilteringProxy, echo: int) -> None:
    def socks(host: bytes, port: int) -> tuple[bytes, bytes]:
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(10)
            s.connect(str(proxy.socket_path))
            s.sendall(b"\x05\x01\x00")
            assert s.recv(2) == b"\x05\x00"
            s.sendall(b"\x05\x01\x00\x03" + bytes([len(host)]) + host + port.to_bytes(2, "big"))
            reply = s.recv(10)
            if reply[1] != 0:
                return reply, b""
            # A line: text that could still become an HTTP request line is held until it ends (round 17).
            s.sendall(b"socks echo\n")
            return reply, s.recv(64)

    reply, data = socks(b"localhost", echo)
    assert reply[1] == 0 and data == b"socks echo\n"
    reply, _ = socks(b"elsewhere.invalid", echo)
    assert reply[1] == 2  # connection not allowed by ruleset
    assert proxy.refusals[-1].host == "elsewhere.invalid"


# -- bwrap -----------------------------------------------------------------------------
async def _open(tmp_path: Path, allowed: tuple[str, ...]) -> tuple[BwrapBackend, Supervisor]:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    ws, session = tmp_path / "ws", tmp_path / "session"
    ws.mkdir()
    session.mkdir()
    # later.env: a denied path that appears mid-session makes the next command start a new zygote.
    policy = SandboxPolicy(
        workspace=ws, network="proxied", allowed_domains=allowed, read_denied=(ws / "later.env",)
    )
    backend = BwrapBackend(BwrapConfig(), policy)
    try:
        await backend.start()
    except BackendUnavailableError as exc:
        require(False, f"bwrap unusable here: {exc}")
    return backend, Supervisor(backend, session_dir=session)


#: The proxy from the environment, NO_PROXY aside: the allowed test name is ``localhost``,
#: which NO_PROXY (rightly) keeps for the sandbox's own loopback.
_FETCH = """
import os, sys, urllib.request, urllib.error
os.environ.pop("NO_PROXY"); os.environ.pop("no_proxy")
opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": os.environ["HTTP_PROXY"]}))
try:
    print(opener.open(sys.argv[1], timeout=10).read().decode(), end="")
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode(), end="")
"""


@pytest.mark.anyio
async def test_bwrap_commands_reach_allowed_server_only_through_the_proxy(tmp_path: Path, web: int) -> None:
    # A Python any uid may run (bwrap as root runs commands under an unprivileged uid).
    py = next((p for p in (sys.executable, "/usr/bin/python3") if _reachable(p)), None)
    require(py is not None, "no Python that the sandbox uid may run")
    backend, sup = await _open(tmp_path, ("localhost",))
    try:
        (tmp_path / "ws" / "fetch.py").write_text(_FETCH)
        ok = await sup.run(f"{py} -I fetch.py http://localhost:{web}/", timeout_s=30)
        assert ok.exit_code == 0 and ok.preview == BODY.decode(), ok.preview
        env = await sup.run("echo $HTTP_PROXY $https_proxy $ALL_PROXY $NO_PROXY", timeout_s=30)
        assert env.preview.split() == [
            "http://127.0.0.1:3128", "http://127.0.0.1:3128", "socks5h://127.0.0.1:3128", "localhost,127.0.0.1"
        ]  # fmt: skip
        # A refused name: 403 with the explanation, recorded on the backend and in the log.
        no = await sup.run(f"{py} -I fetch.py http://blocked.invalid:{web}/", timeout_s=30)
        assert no.preview.startswith("403") and "--allow-domain blocked.invalid" in no.preview, no.preview
        # A redirect to a refused name is refused too (the client's next request goes to the proxy).
        redirected = await sup.run(f"{py} -I fetch.py http://localhost:{web}/redirect", timeout_s=30)
        assert redirected.preview.startswith("403"), redirected.preview
        # Around the proxy: the host's listener is not reachable (the sandbox has its own loopback).
        bypass = await sup.run(
            f"{py} -I -c \"import urllib.request as u; u.urlopen('http://localhost:{web}/')\"", timeout_s=30
        )
        assert bypass.exit_code != 0 and "Connection refused" in bypass.preview, bypass.preview
        direct = await sup.run(
            f"{py} -I -c \"import socket; socket.create_connection(('127.0.0.1', {web}), timeout=5)\"",
            timeout_s=30,
        )
        assert direct.exit_code != 0 and "ConnectionRefusedError" in direct.preview, direct.preview
        if shutil.which("curl"):
            # Plain HTTP, a CONNECT tunnel (-p) and SOCKS5 with the name resolved by the proxy.
            for how in ("", '-p -x "$HTTP_PROXY"', '-x "$ALL_PROXY"'):
                curl = await sup.run(f"curl -sS --noproxy '' {how} http://localhost:{web}/", timeout_s=30)
                assert curl.exit_code == 0 and curl.preview == BODY.decode(), (how, curl.preview)
            # Many at once through the one bridge.
            many = await sup.run(
                f"for i in $(seq 24); do curl -sS --noproxy '' http://localhost:{web}/ & done; wait",
                timeout_s=60,
            )
            assert many.preview.count(BODY.decode()) == 24, many.preview
        # A replaced session sandbox (new zygote, new network namespace) has its bridge too.
        (tmp_path / "ws" / "later.env").write_text("SECRET=1\n")
        again = await sup.run(f"{py} -I fetch.py http://localhost:{web}/; cat later.env", timeout_s=30)
        assert again.preview.startswith(BODY.decode()) and "SECRET" not in again.preview, again.preview
    finally:
        await sup.close()
        await backend.close()
    hosts = [r.host for r in backend.network_refusals]
    assert hosts.count("blocked.invalid") == 2
    assert backend.network_log is not None and "blocked.invalid" in backend.network_log.read_text()
    shutil.rmtree(backend.network_log.parent)  # kept for the operator; the test's own to remove


@pytest.mark.anyio
async def test_bwrap_per_command_refuses_proxied(tmp_path: Path) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed")
    policy = SandboxPolicy(workspace=tmp_path, network="proxied", allowed_domains=("localhost",))
    backend = BwrapBackend(BwrapConfig(persistent=False), policy)
    with pytest.raises(BackendUnavailableError, match="proxied"):
        await backend.start()


# -- where the allow-list comes from ---------------------------------------------------------
def _workspace_opening_the_network(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home, ws = tmp_path / "home", tmp_path / "repo"
    home.mkdir()
    (ws / ".shellrt").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".state"))
    (ws / ".shellrt" / "settings.json").write_text(
        json.dumps(
            {
                "sandbox": {"network": {"allowedDomains": ["evil.example"], "deniedDomains": ["x.example"]}},
                "permissions": {"allow": ["WebFetch(domain:exfil.example)"]},
            }
        )
    )
    return ws


def test_untrusted_workspace_cannot_open_the_network(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from shellrt.runtime import Runtime

    ws = _workspace_opening_the_network(tmp_path, monkeypatch)
    rt = Runtime(ws, sandbox="local")
    assert rt.policy.network == "none" and rt.policy.allowed_domains == ()
    assert rt.policy.denied_domains == ("x.example",)  # a deny may come from anywhere
    assert any("untrusted workspace cannot open the network" in d for d in rt.diagnostics)


def test_trusted_sources_feed_the_allow_list(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from shellrt.runtime import Runtime

    ws = _workspace_opening_the_network(tmp_path, monkeypatch)
    trusted = Runtime(ws, sandbox="local", trust_workspace=True)
    assert trusted.policy.network == "proxied"
    assert set(trusted.policy.allowed_domains) == {"evil.example", "exfil.example"}
    # The operator's own flags (--allow), untrusted workspace or not.
    operator = Runtime(ws, sandbox="local", allow=["WebFetch(domain:pypi.org)"])
    assert operator.policy.network == "proxied" and operator.policy.allowed_domains == ("pypi.org",)


def test_cli_allow_domain_turns_proxied_on(tmp_path: Path) -> None:
    import argparse

    from shellrt.cli._sandbox_options import add_sandbox_options, sandbox_from_args

    parser = argparse.ArgumentParser()
    add_sandbox_options(parser)
    base = ["--workspace", str(tmp_path), "--sandbox", "bwrap"]
    _, policy = sandbox_from_args(parser.parse_args(base), masks=False)
    assert policy.network == "none"
    args = parser.parse_args([*base, "--allow-domain", "PyPI.org", "--allow-domain", "*.pythonhosted.org"])
    _, policy = sandbox_from_args(args, masks=False)
    assert policy.network == "proxied" and policy.allowed_domains == ("pypi.org", "*.pythonhosted.org")
    for bad in ([*base, "--allow-domain", "a", "--network", "host"], [*base, "--allow-domain", "http://x/"]):
        with pytest.raises(SystemExit):
            sandbox_from_args(parser.parse_args(bad), masks=False)


# -- docker ------------------------------------------------------------------------------------
@pytest.mark.anyio
async def test_docker_container_reaches_allowed_server_only_through_the_proxy(
    tmp_path: Path, web: int
) -> None:
    import os

    from tests._docker_support import BUSYBOX, config, require_docker

    require_docker()
    require(os.geteuid() == 0, "docker 'proxied' needs root (setns into the container's network namespace)")
    from sandbox.docker import DockerBackend

    policy = SandboxPolicy(workspace=tmp_path, network="proxied", allowed_domains=("localhost",))
    backend = DockerBackend(config(BUSYBOX), policy)
    await backend.start()
    sup = Supervisor(backend, session_dir=tmp_path / ".session")
    try:
        # A reset (batch recycling) accepts the proxy's own port and keeps it for the next task.
        await backend.protect_executor()
        await backend.reset()
        ask = f"printf 'GET http://localhost:{web}/ HTTP/1.0\\r\\n\\r\\n' | nc 127.0.0.1 3128"
        ok = await sup.run(ask, timeout_s=60)
        assert ok.exit_code == 0 and ok.preview.endswith(BODY.decode()), ok.preview
        env = await sup.run("echo $HTTP_PROXY $ALL_PROXY $no_proxy", timeout_s=60)
        assert env.preview.split() == [
            "http://127.0.0.1:3128",
            "socks5h://127.0.0.1:3128",
            "localhost,127.0.0.1",
        ]
        no = await sup.run(f"wget -qO- http://blocked.invalid:{web}/", timeout_s=60)
        assert no.exit_code != 0 and "403" in no.preview, no.preview
        direct = await sup.run(f"nc 127.0.0.1 {web} </dev/null", timeout_s=60)
        assert direct.exit_code != 0, direct.preview  # the host's listener: not from the container's loopback
        # A task that used the network leaves its counters and connections (their ports) in the
        # container's namespace: its reset refuses the container (red team round 36, docker2).
        from sandbox.docker import ResetError

        with pytest.raises(ResetError, match="counters moved|tcp connection"):
            await backend.reset()
        # A replaced container (killed under us) gets the proxy's port again.
        import subprocess

        assert backend.container_id is not None
        subprocess.run(["docker", "kill", backend.container_id], capture_output=True, check=True, timeout=60)
        with contextlib.suppress(Exception):  # the command that finds the container gone may fail
            await sup.run("true", timeout_s=60)
        again = await sup.run(ask, timeout_s=60)
        assert again.exit_code == 0 and again.preview.endswith(BODY.decode()), again.preview
        assert backend.recoveries
    finally:
        await sup.close()
        await backend.close()
    assert [r.host for r in backend.network_refusals] == ["blocked.invalid"]
    assert backend.network_log is not None and "blocked.invalid" in backend.network_log.read_text()
    shutil.rmtree(backend.network_log.parent)


# -- batch -------------------------------------------------------------------------------------
def test_batch_task_allow_list_on_bwrap(tmp_path: Path, web: int) -> None:
    """A task file's ``allowed_domains`` turns the proxy on, one command or many."""
    require(shutil.which("bwrap") is not None and shutil.which("curl") is not None, "bwrap and curl needed")
    from shellrt.batch import Task
    from shellrt.batch.api import run_sync

    task = Task.model_validate(
        {
            "id": "net",
            "sandbox": {"type": "bwrap", "allowed_domains": ["LocalHost"]},
            "commands": [
                f"curl -sS --fail --noproxy '' http://localhost:{web}/ && curl -s http://refused-batch.invalid/"
            ],
        }
    )
    assert task.sandbox.allowed_domains == ("localhost",)
    before = set(Path("/tmp").glob("shellrt-proxy-*"))
    [result] = run_sync([task], out=tmp_path / "out.jsonl")
    assert [c.exit_code for c in result.commands] == [0], result
    assert [(r["host"], r["port"]) for r in result.network_refusals] == [("refused-batch.invalid", 80)]
    # the log kept for the operator: only this task's (a test on the other worker may be using its
    # own proxy directory right now; removing it made bwrap fail "Can't find source path")
    for leftover in set(Path("/tmp").glob("shellrt-proxy-*")) - before:
        log = leftover / "network.log"
        if log.is_file() and "refused-batch.invalid" in log.read_text(errors="replace"):
            shutil.rmtree(leftover, ignore_errors=True)
    with pytest.raises(ValueError, match="not a domain name"):
        Task.model_validate(
            {"id": "x", "sandbox": {"type": "bwrap", "allowed_domains": ["a/b"]}, "commands": ["true"]}
        )


@pytest.mark.anyio
async def test_runtime_allowed_domains_on_bwrap(
    tmp_path: Path, web: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``Runtime(allowed_domains=…)``: the Bash tool's commands reach the allowed name through the proxy."""
    require(shutil.which("bwrap") is not None and shutil.which("curl") is not None, "bwrap and curl needed")
    from shellrt.protocol import ToolUseBlock
    from shellrt.runtime import Runtime
    from shellrt.tools.bash import Bash

    monkeypatch.setenv("HOME", str(tmp_path))
    ws = tmp_path / "ws"
    ws.mkdir()
    async with Runtime(
        ws, sandbox="bwrap", session_dir=tmp_path / ".s", tools=[Bash()], mode="bypassPermissions",
        allowed_domains=["localhost"],
    ) as rt:  # fmt: skip
        assert rt.policy.network == "proxied"
        [env] = await rt.run_envelopes(
            [
                ToolUseBlock(
                    id="a", name="Bash", input={"command": f"curl -sS --noproxy '' http://localhost:{web}/"}
                )
            ]
        )
        [blocked] = await rt.run_envelopes(
            [ToolUseBlock(id="b", name="Bash", input={"command": "curl -sS http://refused.invalid/"})]
        )
        backend = rt.backend
    assert env.exit_code == 0 and BODY.decode().strip() in env.audit, env.audit
    assert "[network]" not in env.audit
    # The refusal is in the call's audit face (and UI), with the fix.
    assert (
        "[network] blocked refused.invalid:80" in blocked.audit
        and "--allow-domain refused.invalid" in blocked.ui
    )
    log = getattr(backend, "network_log", None)
    assert log is not None and "refused.invalid" in log.read_text()
    shutil.rmtree(log.parent)


def test_a_waiting_connection_survives_garbage_collection(proxy: FilteringProxy) -> None:
    """asyncio holds tasks weakly: a connection waiting for its upstream was collected mid-way (its
    sockets closed under it, ~1 request in 450 cut short); the proxy holds its tasks itself."""
    import gc

    class Collecting(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            gc.collect()  # while the proxy waits for this answer
            self.send_response(200)
            self.send_header("Content-Length", str(len(BODY)))
            self.end_headers()
            self.wfile.write(BODY)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Collecting)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        request = f"GET http://localhost:{server.server_address[1]}/ HTTP/1.0\r\n\r\n".encode()
        short = [i for i in range(5) if not proxy_talk(proxy, request).endswith(BODY)]
    finally:
        server.shutdown()
        server.server_close()
    assert short == []
