"""Red team round 16 (left-overs): WebFetch reaches a public host on ports 80 and 443 only.

The network proxy has reached a public address on 80 and 443 only since round 10; WebFetch, on
the host, reached any port of it: ``http://victim.example:22/``, ``:6379``, ``:8500`` -- a
model could probe and talk to whatever a public host exposes (SSRF to a third party's admin
ports from the operator's address). Now a public address is reached on 80 and 443 unless the
operator's settings name the port (``"webFetch": {"allowPorts": [8443]}``); a private host the
operator opened (``allowPrivateHosts``) keeps every port, as the proxy does. DNS is outside the
machine: answers come from a resolver hook, as in round 15's tests.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import anyio
import httpx  # noqa: F401 - WebFetch imports it lazily
import pytest

from shellrt.protocol import ToolContext, ToolExecutionError
from shellrt.tools.web_fetch import WebFetchInput, WebFetchTool

PUBLIC = "1.2.3.4"  # a global address; nothing is reached: the refusal comes before any connect


@pytest.fixture(autouse=True)
def _public_name(monkeypatch: pytest.MonkeyPatch) -> None:
    real = socket.getaddrinfo

    def fake(host: object, port: object, *args: object, **kwargs: object) -> object:
        name = host.decode() if isinstance(host, bytes) else host
        if name == "victim.example":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (PUBLIC, int(str(port))))]
        return real(host, port, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", fake)


def _ctx(tmp_path: Path, web: dict[str, Any]) -> ToolContext:
    return ToolContext(
        session_id="s",
        session_dir=tmp_path,
        workspace=tmp_path,
        cwd=str(tmp_path),
        settings={"webFetch": {"timeoutSeconds": 2, **web}},
    )


def _judge(tmp_path: Path, url: str, web: dict[str, Any]) -> tuple[str, str]:
    async def go() -> tuple[str, str]:
        tool, ctx = WebFetchTool(), _ctx(tmp_path, web)
        checked = await tool.check_permissions(WebFetchInput(url=url), ctx)
        try:
            await tool.call(WebFetchInput(url=url), ctx)
            called = "fetched"
        except ToolExecutionError as exc:
            called = str(exc)
        return f"{checked.behavior}: {checked.reason}", called

    return anyio.run(go)


@pytest.mark.parametrize("port", [22, 6379, 8443])
def test_a_public_hosts_other_ports_are_refused(tmp_path: Path, port: int) -> None:
    checked, called = _judge(tmp_path, f"http://victim.example:{port}/", {})
    for said in (checked, called):
        assert f"port {port} of the public host victim.example" in said, said
        assert f'"allowPorts": [{port}]' in said, said  # the message says how to allow it
    assert checked.startswith("deny"), checked


def test_the_default_ports_and_an_allowed_port_are_judged_as_before(tmp_path: Path) -> None:
    for url, web in [
        ("http://victim.example/", {}),
        ("https://victim.example/", {}),
        ("http://victim.example:443/", {}),
        ("https://victim.example:8443/", {"allowPorts": [8443]}),
    ]:
        checked, _called = _judge(tmp_path, url, web)
        assert not checked.startswith("deny"), (url, checked)
    # A port the list does not name, or a malformed list, opens nothing.
    for web in ({"allowPorts": [8443]}, {"allowPorts": "8080"}, {"allowPorts": [True, "8080"]}):
        checked, _called = _judge(tmp_path, "http://victim.example:8080/", web)
        assert checked.startswith("deny") and "port 8080" in checked, (web, checked)
