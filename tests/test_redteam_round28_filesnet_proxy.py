"""Red team round 28 (filesnet): a denied *range* on the filtering proxy and in the policy.

Round 27 left it open: a deny-list entry was a name or an address, never a range (the policy
refused ``10.0.0.0/8``), so an operator could not deny a network, and a ``WebFetch(domain:…)``
deny rule over one did not parse. Now ``--deny-domain 10.0.0.0/8`` and the rule's range reach
the proxy, which refuses every DNS answer in it in any spelling. The upstream is a real server on
127.0.0.1; DNS is a hook (outside the machine).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError

from sandbox.policy import SandboxPolicy
from shellrt.permissions.rules import parse_rule
from shellrt.runtime.sandbox_policy import derive_network
from tests._proxy_client import proxy_talk, running_proxy
from tests._tcp_server import tcp_server


@pytest.fixture
def upstream() -> Iterator[tuple[int, list[bytes]]]:
    received: list[bytes] = []

    def answer(conn: socket.socket) -> None:
        conn.settimeout(1)
        try:
            received.append(conn.recv(4096))
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        except OSError:
            pass

    with tcp_server(answer) as port:
        yield port, received


def test_a_denied_range_holds_on_the_proxy_and_in_the_policy(
    tmp_path: Path, upstream: tuple[int, list[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    port, received = upstream
    answers = {"named.example": "127.0.0.1", "mapped.example": "::ffff:127.0.0.1"}
    real = socket.getaddrinfo

    def fake(host: object, p: object, *args: object, **kwargs: object) -> object:
        name = host.decode() if isinstance(host, bytes) else str(host)
        address = answers.get(name)
        if address is None:
            return real(host, p, *args, **kwargs)  # type: ignore[arg-type]
        if ":" in address:
            return [(socket.AF_INET6, socket.SOCK_STREAM, 6, "", (address, int(p), 0, 0))]  # type: ignore[call-overload]
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, int(p)))]  # type: ignore[call-overload]

    monkeypatch.setattr(socket, "getaddrinfo", fake)
    allowed = ("named.example", "mapped.example", "127.0.0.1", "::ffff:127.0.0.1")  # the loopback, by address too

    def statuses(**options: object) -> list[bytes]:
        with running_proxy(tmp_path, *allowed, head_timeout=5, **options) as p:
            return [
                proxy_talk(p, f"CONNECT {t}:{port} HTTP/1.1\r\nHost: {t}:{port}\r\n\r\n".encode()).split(
                    b"\r\n"
                )[0]
                for t in ("named.example", "mapped.example", "127.0.0.1")
            ]

    # The probe can pass: without the deny every target is tunnelled (the upstream is reached).
    assert all(b" 200 " in s for s in statuses()), statuses()
    before = len(received)
    policy = SandboxPolicy(
        workspace=tmp_path, network="proxied", allowed_domains=allowed, denied_domains=("127.0.0.0/30",)
    )
    assert policy.denied_domains == ("127.0.0.0/30",)
    assert all(b" 403 " in s for s in statuses(denied=policy.denied_domains)), statuses(
        denied=("127.0.0.0/30",)
    )
    assert len(received) == before  # nothing of the denied range was reached
    # A bad range says what to write, in the policy (--deny-domain) as in a rule.
    with pytest.raises(ValidationError, match=r"did you mean 127\.0\.0\.0/8"):
        SandboxPolicy(workspace=tmp_path, denied_domains=("127.0.0.1/8",))
    # A deny rule's range reaches the proxied policy (it was a note "ignored" before).
    derived, notes = derive_network(
        SandboxPolicy(workspace=tmp_path, network="proxied", allowed_domains=("pypi.org",)),
        rules=[parse_rule("WebFetch(domain:10.0.0.0/8)", "deny")],
    )
    assert "10.0.0.0/8" in derived.denied_domains and notes == [], (derived.denied_domains, notes)
