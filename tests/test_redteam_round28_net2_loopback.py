"""Red team round 28 (net2): a deny naming a loopback address holds for every loopback spelling.

The filesnet helper left it open: a deny of ``127.0.0.1`` (a ``WebFetch(domain:…)`` rule, the
policy's deny-list, the proxy's) did not cover ``::1``, ``[::]``, ``127.0.0.2`` or ``localhost``,
all of which reach the same machine; and a deny written as an IPv6 network carrying IPv4 addresses
(``::ffff:10.0.0.0/104``) did not cover the IPv4 addresses it spells. A real server on 0.0.0.0
answers on every 127.x address; DNS (outside the machine) is a hook.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox._addrdeny import address_denied
from sandbox.policy import SandboxPolicy
from shellrt.permissions.rules import parse_rule
from shellrt.permissions.ruleset import RuleSet
from shellrt.tools.web_fetch import WebFetchInput, WebFetchTool
from tests._http_server import serve
from tests._proxy_client import proxy_talk, running_proxy
from tests.test_redteam_round28_filesnet_webfetch import _PAGE, _ctx, _dns, _fetch_all

_LOOPBACKS = ["::1", "::", "0.0.0.0", "127.0.0.2", "127.255.255.254", "::ffff:127.0.0.2", "::127.0.0.1",
              "64:ff9b::7f00:2", "2002:7f00:2::"]  # fmt: skip


@pytest.fixture
def dns(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    _dns(
        monkeypatch,
        {"two.example": ["127.0.0.2"], "six.example": ["::ffff:127.0.0.9"], "zero.example": ["0.0.0.0"]},
    )
    yield


def test_a_loopback_deny_covers_every_loopback_spelling(tmp_path: Path, dns: None) -> None:
    # The deny-list's judgement (WebFetch and the proxy): each entry naming loopback denies all of it.
    for entry in ("127.0.0.1", "::1", "::", "0.0.0.0", "127.0.0.0/30", "::ffff:127.0.0.1"):
        missed = [a for a in _LOOPBACKS if address_denied(a, [entry]) is None]
        assert missed == [], (entry, missed)
    assert address_denied("10.0.0.1", ["127.0.0.1"]) is None and address_denied("::2", ["::1"]) is None
    # A network written in a carrying IPv6 form covers the IPv4 addresses it spells, and back.
    for entry in ("::ffff:10.0.0.0/104", "64:ff9b::a00:0/104", "2002:a00::/24", "10.0.0.0/8"):
        assert address_denied("10.1.2.3", [entry]) == entry, entry
        assert address_denied("::ffff:10.1.2.3", [entry]) == entry, entry
        assert address_denied("11.1.2.3", [entry]) is None, entry
    # A rule on the URL's host: every loopback spelling meets a deny of 127.0.0.1 (and of ::1).
    tool = WebFetchTool()
    for rule in ("WebFetch(domain:127.0.0.1)", "WebFetch(domain:::1/128)", "WebFetch(domain:0.0.0.0)"):
        ruleset = RuleSet([parse_rule(rule, "deny")])
        urls = ["http://[::1]/", "http://[::]/", "http://127.0.0.2/", "http://127.1.2.3/", "http://0/",
                "http://[::ffff:127.0.0.2]/", "http://[64:ff9b::7f00:2]/", "http://127.0.0.1/"]  # fmt: skip
        subject = tool.permission_subject
        missed = [
            u for u in urls if ruleset.content_hit("deny", "WebFetch", subject(WebFetchInput(url=u))) is None
        ]
        assert missed == [], (rule, missed)
    # WebFetch connects: names answering another loopback address and localhost are refused.
    with serve({"/secret": _PAGE}, host="0.0.0.0") as srv:
        port = srv.server_port
        hosts = ("two.example", "six.example", "zero.example", "localhost", "127.0.0.2")
        urls = [f"http://{h}:{port}/secret" for h in hosts]
        allow = ("0.0.0.0", "::1", "::ffff:127.0.0.0/104")
        open_ctx = _ctx(tmp_path, [], allow=allow)
        assert all(
            not isinstance(r, Exception) for r in _fetch_all(tool, open_ctx, urls[:1])
        )  # the probe can pass
        before = srv.hits.get("/secret", 0)
        for ctx in (_ctx(tmp_path, [], denied_domains=("127.0.0.1",), allow=allow),
                    _ctx(tmp_path, ["WebFetch(domain:127.0.0.1)"], allow=allow)):  # fmt: skip
            found = _fetch_all(tool, ctx, urls)
            passed = [(u, r) for u, r in zip(urls, found, strict=True) if "Refused" not in str(r)]
            assert passed == []
            assert "network deny-list" in str(found[0]) or "domain:127.0.0.1" in str(found[0]), found[0]
        assert srv.hits.get("/secret", 0) == before


def test_the_proxy_denies_every_loopback_spelling(tmp_path: Path, dns: None) -> None:
    with serve({"/": _PAGE}, host="0.0.0.0") as srv:
        port = srv.server_port
        targets = ("two.example", "six.example", "zero.example", "localhost", "127.0.0.2")
        allowed = (*targets, "::ffff:127.0.0.9", "0.0.0.0")

        def statuses(**options: object) -> list[bytes]:
            with running_proxy(tmp_path, *allowed, head_timeout=5, **options) as p:
                request = "CONNECT {t}:{port} HTTP/1.1\r\nHost: {t}:{port}\r\n\r\n"
                return [
                    proxy_talk(p, request.format(t=t, port=port).encode()).split(b"\r\n")[0] for t in targets
                ]

        assert all(b" 200 " in s for s in statuses()), statuses()  # the probe can pass
        policy = SandboxPolicy(workspace=tmp_path, network="proxied", allowed_domains=allowed,
                               denied_domains=("127.0.0.1",))  # fmt: skip
        found = statuses(denied=policy.denied_domains)
        assert all(b" 403 " in s for s in found), found
