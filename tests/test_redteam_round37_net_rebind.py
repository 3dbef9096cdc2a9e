"""Red team round 37 (net): a listed name rebinding to a private address mid-session.

A name the operator lists exactly (``--allow-domain svc.flip.test``) may reach non-public
addresses on every port (an internal service) and public ones on the web ports. Whoever runs the
name's DNS chooses at each lookup: public when the session starts, then ``10.1.2.3``, and the
proxy opened ``10.1.2.3:22``, a host of the operator's network no rule named. Now a name that
answered only public addresses keeps being judged public: a later non-public answer is refused
(403, naming DNS rebinding) for the rest of the session; a name first answering private addresses
keeps them. DNS is outside the machine: a stand-in ``getaddrinfo`` plays the name server.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

import sandbox._proxy as proxy_mod
from tests._proxy_client import proxy_talk, running_proxy


def _flipping(monkeypatch: pytest.MonkeyPatch, answers: dict[str, list[str]]) -> None:
    real = socket.getaddrinfo

    def resolver(host: object, port: object, *args: object, **kwargs: object) -> object:
        name = host.decode() if isinstance(host, bytes) else str(host)
        if name in answers:
            answer = answers[name].pop(0) if len(answers[name]) > 1 else answers[name][0]
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, int(port))) for a in answer.split(",")]  # type: ignore[call-overload]
        return real(host, port, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    monkeypatch.setattr(proxy_mod, "_CONNECT_TIMEOUT", 0.5)  # nothing listens at these addresses


def test_a_listed_public_name_does_not_rebind_to_a_private_address(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _flipping(
        monkeypatch, {"svc.flip.test": ["93.184.216.34", "10.1.2.3", "93.184.216.34,10.1.2.3", "93.184.216.34"]}
    )
    with running_proxy(tmp_path, "svc.flip.test") as p:
        first = proxy_talk(p, b"CONNECT svc.flip.test:443 HTTP/1.1\r\n\r\n")  # public
        flipped = proxy_talk(p, b"CONNECT svc.flip.test:22 HTTP/1.1\r\n\r\n")  # now 10.1.2.3
        mixed = proxy_talk(p, b"CONNECT svc.flip.test:22 HTTP/1.1\r\n\r\n")  # both: the public one only
        again = proxy_talk(p, b"CONNECT svc.flip.test:22 HTTP/1.1\r\n\r\n")  # public again: port 22 refused
        reasons = [r.reason for r in p.refusals]
    assert b"rebinding" not in first, first[:300]
    assert b"ports 80 and 443" in mixed, mixed[:300]  # 10.1.2.3 left out: a public host's port 22
    assert b"ports 80 and 443" in again, again[:300]
    assert flipped.startswith(b"HTTP/1.1 403") and b"rebinding" in flipped, (flipped[:300], reasons)


def test_a_listed_name_first_private_keeps_its_private_addresses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _flipping(monkeypatch, {"internal.flip.test": ["10.9.8.7"]})
    with running_proxy(tmp_path, "internal.flip.test") as p:
        answers = [proxy_talk(p, b"CONNECT internal.flip.test:5432 HTTP/1.1\r\n\r\n") for _ in range(2)]
        reasons = [r.reason for r in p.refusals]
    assert not [r for r in reasons if "rebinding" in r], reasons
    assert all(not a.startswith(b"HTTP/1.1 403") for a in answers), answers
