"""``WebFetch(domain:…)`` rules are folded like the fetched host (docs/security.md, "still open" of round 6).

WebFetch canonicalises the URL's host the way the resolver reads it (``134744072`` is
``8.8.8.8``); a rule's host was compared as written, so a deny spelled numerically denied
nothing and an allow named a host no fetch ever has. Rules now fold their host with the
fetcher's own function (`shellrt.permissions.hosts`), and a numeric spelling that is no
IPv4 address is a malformed rule. Through the real gate, and a real server on 127.0.0.1.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

import shellrt
from shellrt.permissions import build_governance, parse_rule
from shellrt.permissions.errors import RuleSyntaxError
from shellrt.protocol import ToolContext, ToolUseBlock
from shellrt.tools.web_fetch import WebFetchInput, WebFetchTool
from tests._governance import envelope_text, isolated_workspace
from tests._http_server import _Server, serve

_ids = itertools.count()

#: Every spelling the resolver reads as 8.8.8.8.
EIGHTS = ["134744072", "0x8.0x8.0x8.0x8", "010.010.010.010", "8.8.2056", "0x8080808", "8.8.8.8."]


def _decide(
    tmp_path: Path, url: str, *, mode: str, allow: tuple[str, ...] = (), deny: tuple[str, ...] = ()
) -> str:
    gov = build_governance(tmp_path, mode=mode, allow=allow, deny=deny, home=tmp_path / "home")
    ctx = ToolContext(session_id="s", session_dir=tmp_path, workspace=tmp_path, cwd=str(tmp_path))
    tool = WebFetchTool()
    decision = anyio.run(lambda: gov.gate.authorize(tool, tool.backfill(WebFetchInput(url=url)), ctx))
    assert not any("malformed" in d for d in gov.diagnostics), gov.diagnostics
    return decision.behavior


@pytest.mark.parametrize("spelling", EIGHTS)
def test_a_deny_rule_spelled_numerically_denies_the_address(tmp_path: Path, spelling: str) -> None:
    rule = f"WebFetch(domain:{spelling})"
    assert parse_rule(rule, "deny").specifier == "domain:8.8.8.8"
    for url in ("https://8.8.8.8/", "https://134744072/", "https://0x8.8.8.8/x"):
        assert _decide(tmp_path, url, mode="bypassPermissions", deny=(rule,)) == "deny", (rule, url)


@pytest.mark.parametrize("spelling", EIGHTS)
def test_an_allow_rule_spelled_numerically_allows_that_address_only(tmp_path: Path, spelling: str) -> None:
    rule = f"WebFetch(domain:{spelling})"
    assert _decide(tmp_path, "https://8.8.8.8/", mode="default", allow=(rule,)) == "allow"
    for other in ("https://8.8.8.9/", "https://8.8.4.4/", "https://134744073/", "https://example.com/"):
        assert _decide(tmp_path, other, mode="default", allow=(rule,)) == "deny", (rule, other)


@pytest.mark.parametrize(
    "spelling",
    ["256.1.1.1", "1.2.3.08", "0x100000000", "4294967296", "1.2.3.4.5", "*.8.8", "*.0x8", "example.0x1"],
)
def test_a_numeric_host_that_is_no_address_is_a_malformed_rule(spelling: str) -> None:
    rule = f"WebFetch(domain:{spelling})"
    with pytest.raises(RuleSyntaxError) as err:
        parse_rule(rule, "deny")
    message = str(err.value)
    assert rule in message and "domain:8.8.8.8" in message, message


def test_names_and_wildcards_are_kept(tmp_path: Path) -> None:
    assert parse_rule("WebFetch(domain:Docs.Python.org.)", "allow").specifier == "domain:docs.python.org"
    assert parse_rule("WebFetch(domain:*.example.com)", "allow").specifier == "domain:*.example.com"
    assert parse_rule("WebFetch(domain:1e100.net)", "allow").specifier == "domain:1e100.net"
    assert parse_rule("WebFetch(domain:127.1)", "deny").specifier == "domain:127.0.0.1"


@pytest.fixture(scope="module")
def server() -> Iterator[_Server]:
    with serve({"/page": (200, {"Content-Type": "text/plain"}, b"THE-PAGE")}) as srv:
        yield srv


async def _fetch(ws: Path, url: str, *, mode: str, **kw: object) -> tuple[bool, str]:
    settings = ws.parent / f"cli{next(_ids)}.json"
    settings.write_text(json.dumps({"webFetch": {"allowPrivateHosts": ["127.0.0.1"]}}))
    async with shellrt.Runtime(
        ws,
        "local",
        session_dir=ws.parent / f"s{next(_ids)}",
        tools=[WebFetchTool()],
        settings_files=[settings],
        mode=mode,
        **kw,  # type: ignore[arg-type]
    ) as rt:
        [envelope] = await rt.run_envelopes(
            [ToolUseBlock(id=f"g8w{next(_ids)}", name="WebFetch", input={"url": url})]
        )
        return envelope.is_error, envelope_text(envelope)


@pytest.mark.anyio
async def test_through_the_runtime_against_a_real_server(
    server: _Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = isolated_workspace(tmp_path, monkeypatch)
    url = f"http://127.0.0.1:{server.server_port}/page"
    before = server.hits["/page"]
    failed, text = await _fetch(ws, url, mode="bypassPermissions", deny=["WebFetch(domain:0x7f.0.0.1)"])
    assert failed and "THE-PAGE" not in text, text
    assert server.hits["/page"] == before
    failed, text = await _fetch(ws, url, mode="default", allow=["WebFetch(domain:2130706433)"])
    assert not failed and "THE-PAGE" in text, text
    assert server.hits["/page"] == before + 1
