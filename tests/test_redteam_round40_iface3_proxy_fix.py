"""Red team, round 40 (iface3): the proxy's refusal named a fix that could not work.

Every refusal of the network proxy ended "To allow it, run with --allow-domain HOST", and the CLI
and the session's audit line said "allow it with --allow-domain HOST", also when the session's
deny-list named the host or its address (a deny beats any allow: Ray nodes deny their own
loopback since round 39, so "--allow-domain 127.0.0.1" was a fix that changes nothing), and
when no listing could help (a port other than 80/443 of a public host, a malformed tunnel). The
operator and the model were sent to a dead end. A refusal now names a fix only when listing the
host allows it, and otherwise says why none does. A real proxy on its Unix socket, a real
listener on 127.0.0.1.
"""

from __future__ import annotations

import socket
from pathlib import Path

from tests._proxy_client import proxy_talk, running_proxy


def _listener() -> socket.socket:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(4)
    return s


def test_a_denied_address_is_not_told_to_be_listed(tmp_path: Path) -> None:
    """Failed before: "blocked 127.0.0.1:P: denied ...; To allow it, run with --allow-domain 127.0.0.1"."""
    with _listener() as srv, running_proxy(tmp_path, "127.0.0.1", "localhost", denied=("127.0.0.1",)) as p:
        port = srv.getsockname()[1]
        for host in ("127.0.0.1", "localhost"):
            out = proxy_talk(p, f"CONNECT {host}:{port} HTTP/1.1\r\n\r\n".encode())
            assert out.startswith(b"HTTP/1.1 403"), out
            text = out.decode()
            assert "deny-list" in text, text
            assert "To allow it" not in text and "run with --allow-domain" not in text, text
            assert "deny" in text.rsplit(".", 3)[-3] or "deny-list beats" in text, text
        for refusal in p.refusals:
            assert "--allow-domain" not in refusal.fix() or "does not" in refusal.fix(), refusal.fix()


def test_a_refusal_no_listing_can_lift_names_no_listing(tmp_path: Path) -> None:
    """Failed before: a bad port was told "To allow it, run with --allow-domain example.com"."""
    with running_proxy(tmp_path, "example.com") as p:
        out = proxy_talk(p, b"CONNECT example.com:0 HTTP/1.1\r\n\r\n")
        assert out.startswith(b"HTTP/1.1 403"), out
        assert b"To allow it" not in out and b"--allow-domain example.com" not in out, out


def test_a_name_not_listed_is_still_told_how_to_list_it(tmp_path: Path) -> None:
    """The control: the fix is named where it works."""
    with running_proxy(tmp_path, "example.com") as p:
        out = proxy_talk(p, b"CONNECT other.invalid:443 HTTP/1.1\r\n\r\n")
        assert b"--allow-domain other.invalid" in out, out
        assert "allow it with --allow-domain other.invalid" in p.refusals[0].fix(), p.refusals[0].fix()
