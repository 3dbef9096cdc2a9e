"""Red team round 28 (net2): a denied *name* and another name pointing at its address.

The filesnet helper left it open: ``WebFetch(domain:internal.example)`` (or the name on the
policy's deny-list) was matched against the URL's host only, so ``alias.example``, whose DNS
answered internal.example's address, was fetched. WebFetch now also refuses a URL whose DNS
answers include an address a denied exact name resolves to at check time. A real server on
0.0.0.0 answers on every 127.x address; DNS (outside the machine) is a hook.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.tools.web_fetch import WebFetchTool
from tests._http_server import serve
from tests._own_address import own_ipv4
from tests.test_redteam_round28_filesnet_webfetch import _PAGE, _ctx, _dns, _fetch_all


def test_a_name_sharing_a_denied_names_address_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    own = own_ipv4()  # a second reachable address: a name resolving to loopback denies all of it
    asked = _dns(
        monkeypatch,
        {
            "internal.example": [own],  # denied by a rule
            "alias.example": [own],  # the attacker's name for internal.example's address
            "other.example": ["127.0.0.7"],  # nobody's address: fetched
            "listed.example": ["127.0.0.6"],  # denied on the policy's deny-list
            "alias2.example": ["::ffff:127.0.0.6"],  # its address, another spelling
            "other2.example": [own],  # nobody's address there: fetched
        },
    )
    tool = WebFetchTool()
    with serve({"/secret": _PAGE}, host="0.0.0.0") as srv:
        port = srv.server_port
        hosts = ("alias.example", "other.example", "alias2.example", "other2.example")
        urls = [f"http://{h}:{port}/secret" for h in hosts]
        # The probe can pass: without the denies every name is fetched.
        probe = _fetch_all(WebFetchTool(), _ctx(tmp_path, [], allow=(own,)), urls)
        assert [type(r).__name__ for r in probe] == ["WebFetchOutput"] * 4, probe
        before = srv.hits.get("/secret", 0)
        rules = ["WebFetch(domain:internal.example)", "WebFetch(domain:*.wild.example)"]
        ctx = _ctx(tmp_path, rules, denied_domains=("nxdomain.invalid",), allow=(own,))
        alias, other = _fetch_all(tool, ctx, urls[:2])
        ctx = _ctx(tmp_path, [], denied_domains=("listed.example",), allow=(own,))
        alias2, other2 = _fetch_all(WebFetchTool(), ctx, urls[2:])
        assert srv.hits.get("/secret", 0) == before + 2, (alias, other, alias2, other2)
    assert (
        f"WebFetch(domain:internal.example) from session settings, as internal.example resolves to {own}"
        in str(alias)
    ), alias
    assert "network deny-list, as listed.example resolves to 127.0.0.6" in str(alias2), alias2
    assert not isinstance(other, Exception) and not isinstance(other2, Exception), (other, other2)
    assert "nxdomain.invalid" in asked and not any("wild.example" in n for n in asked)  # wildcards: no lookup
