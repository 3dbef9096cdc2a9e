"""Red team, round 40 (review17): a fronting refusal told to list a name already listed.

Round 40 (iface3) gave each proxy refusal the fix that lifts it (`Refusal.fix`). A tunnel to a
listed name whose TLS ClientHello names another host (domain fronting) is refused whatever is
listed; its fix was judged with an empty allow-list, so a fronted name the operator had listed
read "allow it with --allow-domain example.com", a fix that changes nothing (the operator is sent
to a dead end; the reason's own "connect to it by its own name" is the way). The fix is now
judged against the session's lists. A real proxy on its Unix socket, a real listener on 127.0.0.1.
"""

from __future__ import annotations

import socket
import ssl
from pathlib import Path

import pytest

from tests._proxy_client import running_proxy, tunnel_talk


def _client_hello(server_name: str) -> bytes:
    ctx = ssl.create_default_context()
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    conn = ctx.wrap_bio(incoming, outgoing, server_hostname=server_name)
    with pytest.raises(ssl.SSLWantReadError):
        conn.do_handshake()
    return outgoing.read()


def test_a_fronted_name_already_listed_is_not_told_to_be_listed(tmp_path: Path) -> None:
    """Failed before: "allow it with --allow-domain example.com" for a listed example.com."""
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(4)
        port = srv.getsockname()[1]
        with running_proxy(tmp_path, "localhost", "example.com") as p:
            tunnel_talk(p, _client_hello("example.com"), port)
            fronted = [r for r in p.refusals if r.host == "example.com" and "fronting" in r.reason]
            assert fronted, p.refusals
            assert "allow it with --allow-domain" not in fronted[0].fix(), fronted[0].fix()
            assert "To allow it" not in fronted[0].message(), fronted[0].message()
            # The control: a fronted name not listed is still told how to reach it by its own name.
            tunnel_talk(p, _client_hello("other.invalid"), port)
            other = [r for r in p.refusals if r.host == "other.invalid"]
            assert other and "--allow-domain other.invalid" in other[0].fix(), p.refusals
