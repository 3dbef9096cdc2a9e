"""Red team round 28 (filesnet): WebFetch's deny rules judged on the addresses it connects to.

Round 27 left this open: ``WebFetch(domain:ADDRESS)`` deny rules (and the operator's network
deny-list) were judged by the permission engine on the URL's host before any lookup, so a name
whose DNS answers a denied address was fetched, on the first hop, on a same-host redirect's hop
(DNS rebinding) and from the cache. A real server on 0.0.0.0 answers on every 127.x address;
``allowPrivateHosts`` lists ``127.0.0.0/8`` (the operator let WebFetch reach the host) so only the
deny rules stand between a name and a denied address. DNS (outside the machine) is a hook.
"""

from __future__ import annotations

import socket
from pathlib import Path

import anyio
import pytest

from sandbox.base import SandboxBackend
from sandbox.local import LocalBackend
from sandbox.policy import SandboxPolicy
from shellrt.permissions.engine import PermissionEngine
from shellrt.permissions.gate import RulesGate
from shellrt.permissions.interfaces import PermissionGate
from shellrt.permissions.rules import parse_rule
from shellrt.permissions.ruleset import RuleSet
from shellrt.protocol import ToolContext, ToolExecutionError
from shellrt.tools.web_fetch import WebFetchInput, WebFetchTool
from tests._http_server import serve
from tests._own_address import own_ipv4

_PAGE = (200, {"Content-Type": "text/plain"}, b"secret of 127.0.0.2\n")


def _dns(monkeypatch: pytest.MonkeyPatch, answers: dict[str, list[str]]) -> list[str]:
    """Each lookup of a name takes its next answer (the last repeats); returns the names asked."""
    asked: list[str] = []
    real = socket.getaddrinfo

    def fake(host: object, port: object, *args: object, **kwargs: object) -> object:
        name = (host.decode() if isinstance(host, bytes) else str(host)).rstrip(".").lower()
        asked.append(name)
        queue = answers.get(name)
        if queue is None:
            return real(host, port, *args, **kwargs)  # type: ignore[arg-type]
        address = queue.pop(0) if len(queue) > 1 else queue[0]
        if ":" in address:
            return [(socket.AF_INET6, socket.SOCK_STREAM, 6, "", (address, int(port), 0, 0))]  # type: ignore[call-overload]
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, int(port)))]  # type: ignore[call-overload]

    monkeypatch.setattr(socket, "getaddrinfo", fake)
    return asked


def _ctx(
    tmp_path: Path, rules: list[str], denied_domains: tuple[str, ...] = (), allow: tuple[str, ...] = ()
) -> ToolContext:
    ruleset = RuleSet([parse_rule(r, "deny") for r in rules])
    gate = RulesGate(PermissionEngine(ruleset, workspace=tmp_path))
    backend = LocalBackend(policy=SandboxPolicy(workspace=tmp_path, denied_domains=denied_domains))
    return ToolContext(
        session_id="s",
        session_dir=tmp_path,
        workspace=tmp_path,
        cwd=str(tmp_path),
        settings={"webFetch": {"allowPrivateHosts": ["127.0.0.0/8", "::ffff:127.0.0.0/104", *allow]}},
        services={PermissionGate: gate, SandboxBackend: backend},
    )


def _fetch_all(tool: WebFetchTool, ctx: ToolContext, urls: list[str]) -> list[object]:
    found: list[object] = []

    async def main() -> None:
        for url in urls:  # in order: the cache and the rebinding answers depend on it
            try:
                found.append((await tool.call(WebFetchInput(url=url), ctx)).data)
            except ToolExecutionError as exc:
                found.append(exc)

    anyio.run(main)
    return found


def test_a_denied_address_is_not_fetched_through_a_name_a_redirect_or_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    own = own_ipv4()  # allowed: a deny of 127.0.0.2 denies every loopback address (round 28, net2)
    asked = _dns(
        monkeypatch,
        {
            "named.example": ["127.0.0.2"],
            "mapped.example": ["::ffff:127.0.0.2"],  # the IPv4-mapped spelling of the denied address
            "rebind.example": [own, "127.0.0.2"],  # allowed first, denied on the redirect's hop
            "cached.example": [own, "127.0.0.2"],  # allowed and cached, then denied
            "policy.example": ["127.0.0.3"],  # on the sandbox policy's deny-list (--deny-domain)
        },
    )
    routes: dict[str, tuple[int, dict[str, str], bytes]] = {
        "/secret": _PAGE,
        "/r": (302, {"Location": "/secret"}, b""),
        "/page": _PAGE,
    }
    with serve(routes, host="0.0.0.0") as srv:
        port = srv.server_port
        tool = WebFetchTool()
        ctx = _ctx(
            tmp_path,
            ["WebFetch(domain:127.0.0.2)"],
            denied_domains=("127.0.0.3", "evil.example"),
            allow=(own,),
        )
        urls = [
            f"http://named.example:{port}/secret",
            f"http://mapped.example:{port}/secret",
            f"http://rebind.example:{port}/r",
            f"http://cached.example:{port}/page",
            f"http://cached.example:{port}/page",
            f"http://policy.example:{port}/secret",
            f"http://evil.example:{port}/secret",
        ]
        found = _fetch_all(tool, ctx, urls)
        hits = dict(srv.hits)
    # The first fetch of cached.example is allowed (this machine's own address); every other one is refused.
    first_cached = found.pop(3)
    assert not isinstance(first_cached, Exception), first_cached
    passed = [(u, r) for u, r in zip(urls[:3] + urls[4:], found, strict=True) if "Refused" not in str(r)]
    assert passed == []
    assert "denied by deny rule WebFetch(domain:127.0.0.2)" in str(found[0])
    assert "resolves to 127.0.0.3" in str(found[4])  # the rule on 127.0.0.2 denies all loopback (net2)
    # Nothing denied was read: /secret never, /page once (the allowed first fetch), /r once.
    assert hits.get("/secret", 0) == 0 and hits.get("/page", 0) == 1 and hits.get("/r", 0) == 1, hits
    # A denied name is refused by name, before its lookup for the URL (round 28 net2: denied exact
    # names are looked up for their addresses on the other fetches' checks).
    assert "evil.example is denied by the session's network deny-list" in str(found[-1]), found[-1]
    assert "evil.example" in asked


def test_range_rules_grammar_errors_and_carried_spellings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A range rule parses (IPv4 and IPv6), canonical; a bad one says how to write it.
    assert parse_rule("WebFetch(domain:10.0.0.0/8)", "deny").specifier == "domain:10.0.0.0/8"
    assert parse_rule("WebFetch(domain:FD00::/8)", "deny").specifier == "domain:fd00::/8"
    for bad, hint in [
        ("10.1.2.3/8", "did you mean 10.0.0.0/8"),
        ("10.0.0.0/33", "10.0.0.0/8"),
        ("010.0.0.0/8", "10.0.0.0/8"),
        ("evil.test/8", "ADDRESS/PREFIX"),
    ]:
        with pytest.raises(ValueError, match="not an address range") as info:
            parse_rule(f"WebFetch(domain:{bad})", "deny")
        assert hint in str(info.value), info.value
    # The URL's host as an address: every spelling that reaches one in the range is denied.
    ruleset = RuleSet(
        [
            parse_rule("WebFetch(domain:127.0.0.0/30)", "deny"),
            parse_rule("WebFetch(domain:93.184.216.34)", "deny"),
        ]
    )
    tool = WebFetchTool()
    denied = [
        "http://127.0.0.2/",
        "http://2130706434/",  # 127.0.0.2 as a number
        "http://0x7f.0.0.3/",
        "http://[::ffff:127.0.0.1]/",
        "http://[64:ff9b::7f00:1]/",  # NAT64 of 127.0.0.1
        "http://[2002:7f00:1::]/",  # 6to4 of 127.0.0.1
        "http://[64:ff9b::5db8:d822]/",  # NAT64 of the denied public 93.184.216.34
        "http://0.0.0.0/",  # Linux connects the unspecified address to the loopback
        "http://0/",
        "http://[::ffff:0.0.0.0]/",
    ]
    missed = [
        u
        for u in denied
        if ruleset.content_hit("deny", "WebFetch", tool.permission_subject(WebFetchInput(url=u))) is None
    ]
    assert missed == []
    allowed = RuleSet([parse_rule("WebFetch(domain:127.0.0.0/30)", "allow")])
    assert allowed.content_allow("WebFetch", tool.permission_subject(WebFetchInput(url="http://127.0.0.3/")))
    # An allow range covers addresses as written only, never an IPv6 spelling carrying one.
    assert not allowed.content_allow(
        "WebFetch", tool.permission_subject(WebFetchInput(url="http://[64:ff9b::7f00:1]/"))
    )
    # A range applies to DNS answers too: a name whose answer is in it is refused, and so is the
    # unspecified address (a name's answer or the URL's), which reaches the loopback it denies.
    _dns(monkeypatch, {"range.example": ["127.0.0.1"], "zero.example": ["0.0.0.0"]})
    with serve({"/secret": _PAGE}, host="0.0.0.0") as srv:
        port = srv.server_port
        ctx = _ctx(tmp_path, ["WebFetch(domain:127.0.0.0/30)"], allow=("0.0.0.0",))
        urls = [f"http://{h}:{port}/secret" for h in ("range.example", "zero.example", "0.0.0.0")]
        found = _fetch_all(tool, ctx, urls)
        assert srv.hits.get("/secret", 0) == 0
    passed = [(u, r) for u, r in zip(urls, found, strict=True) if "127.0.0.0/30" not in str(r)]
    assert passed == []
    # An ask rule's range: through a name no one was asked, so it is refused; the URL naming the
    # address itself was asked about by the engine (approved here), so it is fetched.
    ruleset = RuleSet([parse_rule("WebFetch(domain:127.0.0.0/30)", "ask")])
    assert ruleset.content_hit(
        "ask", "WebFetch", tool.permission_subject(WebFetchInput(url="http://127.0.0.1/"))
    )
    with serve({"/secret": _PAGE}, host="0.0.0.0") as srv:
        ctx = _ctx(tmp_path, [])
        ctx.services[PermissionGate] = RulesGate(PermissionEngine(ruleset, workspace=tmp_path))
        named, literal = _fetch_all(
            tool,
            ctx,
            [f"http://range.example:{srv.server_port}/secret", f"http://127.0.0.1:{srv.server_port}/secret"],
        )
        assert srv.hits.get("/secret", 0) == 1
    assert "ask rule WebFetch(domain:127.0.0.0/30)" in str(named) and not isinstance(literal, Exception), (
        named,
        literal,
    )
