"""``allowManagedPermissionRulesOnly`` limits modes and directories, not only rules.

Under that managed policy lower sources could not allow by rule, yet a user or trusted
project ``defaultMode: bypassPermissions`` (or ``acceptEdits``, or the caller's ``--mode``)
still applied and allowed everything unasked, and their ``additionalDirectories`` still
widened where the tools and the sandbox write. Now only the managed settings choose a
widening mode or add directories; lower sources may still narrow (``plan``, ``dontAsk``),
and a warning names what was ignored. Real commands on the local backend, headless (an ask
is a deny).
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

import shellrt
from shellrt.permissions import build_governance
from shellrt.permissions.governance import InvalidModeError
from shellrt.protocol import ResultEnvelope, ToolUseBlock
from shellrt.tools.bash import Bash
from shellrt.tools.write import WriteTool
from tests._governance import envelope_text, isolated_workspace

pytestmark = pytest.mark.anyio

_ids = itertools.count()
_MANAGED = {"allowManagedPermissionRulesOnly": True}


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolated_workspace(tmp_path, monkeypatch)


def _write(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def _user(ws: Path) -> Path:
    return ws.parent / "home" / ".shellrt" / "settings.json"


def _project(ws: Path) -> Path:
    return ws / ".shellrt" / "settings.json"


async def _run(
    ws: Path, calls: list[tuple[str, dict[str, Any]]], **kw: Any
) -> tuple[list[ResultEnvelope], Any]:
    async with shellrt.Runtime(
        ws,
        "local",
        session_dir=ws.parent / f"s{next(_ids)}",
        tools=[Bash(), WriteTool()],
        trust_workspace=True,
        **kw,
    ) as rt:
        blocks = [ToolUseBlock(id=f"g8m{next(_ids)}", name=n, input=i) for n, i in calls]
        return await rt.run_envelopes(blocks), rt


@pytest.mark.parametrize("where", ["user", "project"])
@pytest.mark.parametrize("mode", ["bypassPermissions", "acceptEdits"])
async def test_a_lower_source_cannot_widen_the_mode(ws: Path, where: str, mode: str) -> None:
    _write(ws.parent / "managed.json", _MANAGED)
    settings = _user(ws) if where == "user" else _project(ws)
    _write(settings, {"permissions": {"defaultMode": mode}})
    results, rt = await _run(
        ws,
        [("Bash", {"command": "touch by-bash"}), ("Write", {"file_path": str(ws / "w.txt"), "content": "x"})],
    )
    assert rt.governance.mode == "default"
    for envelope in results:
        assert envelope.is_error, envelope_text(envelope)
    assert not (ws / "by-bash").exists() and not (ws / "w.txt").exists()
    warning = [d for d in rt.diagnostics if "allowManagedPermissionRulesOnly" in d and mode in d]
    assert warning and str(settings) in warning[0], rt.diagnostics


async def test_the_callers_mode_flag_cannot_widen_it_either(ws: Path) -> None:
    _write(ws.parent / "managed.json", _MANAGED)
    results, rt = await _run(ws, [("Bash", {"command": "touch by-flag"})], mode="bypassPermissions")
    assert rt.governance.mode == "default"
    assert results[0].is_error and not (ws / "by-flag").exists(), envelope_text(results[0])
    assert any("--mode: mode bypassPermissions ignored" in d for d in rt.diagnostics), rt.diagnostics


async def test_managed_settings_still_choose_the_mode_and_lower_sources_still_narrow(ws: Path) -> None:
    _write(ws.parent / "managed.json", {**_MANAGED, "permissions": {"defaultMode": "bypassPermissions"}})
    results, rt = await _run(ws, [("Bash", {"command": "touch by-managed"})])
    assert rt.governance.mode == "bypassPermissions" and not results[0].is_error
    assert (ws / "by-managed").exists()
    _write(ws.parent / "managed.json", _MANAGED)
    _write(_user(ws), {"permissions": {"defaultMode": "plan"}})
    results, rt = await _run(ws, [("Bash", {"command": "touch by-plan"})])
    assert rt.governance.mode == "plan" and not (ws / "by-plan").exists()


async def test_a_lower_source_cannot_add_directories(ws: Path) -> None:
    extra = ws.parent / "extra"
    extra.mkdir()
    _write(ws.parent / "managed.json", {**_MANAGED, "permissions": {"defaultMode": "acceptEdits"}})
    _write(_user(ws), {"permissions": {"additionalDirectories": [str(extra)]}})
    results, rt = await _run(ws, [("Write", {"file_path": str(extra / "planted.txt"), "content": "x"})])
    assert extra not in rt.governance.allowed_roots()
    assert results[0].is_error and not (extra / "planted.txt").exists(), envelope_text(results[0])
    assert any("additionalDirectories" in d and str(extra) in d for d in rt.diagnostics), rt.diagnostics
    # without the policy the same user setting is obeyed (the test can fail)
    _write(ws.parent / "managed.json", {"permissions": {"defaultMode": "acceptEdits"}})
    results, rt = await _run(ws, [("Write", {"file_path": str(extra / "planted.txt"), "content": "x"})])
    assert not results[0].is_error and (extra / "planted.txt").exists(), envelope_text(results[0])


def test_switching_the_session_to_a_widening_mode_is_refused(ws: Path) -> None:
    _write(ws.parent / "managed.json", {**_MANAGED, "permissions": {"defaultMode": "acceptEdits"}})
    gov = build_governance(ws, home=ws.parent / "home")
    with pytest.raises(InvalidModeError, match="allowManagedPermissionRulesOnly"):
        gov.set_mode("bypassPermissions")
    gov.set_mode("plan")
    gov.set_mode("acceptEdits")  # the managed settings' own mode
    assert gov.mode == "acceptEdits"


async def test_a_lower_source_cannot_open_private_hosts_to_webfetch(ws: Path) -> None:
    from shellrt.tools.web_fetch import WebFetchTool
    from tests._http_server import serve

    with serve({"/meta": (200, {"Content-Type": "text/plain"}, b"METADATA")}) as server:
        url = f"http://127.0.0.1:{server.server_port}/meta"
        _write(_user(ws), {"webFetch": {"allowPrivateHosts": True}})
        managed = {**_MANAGED, "permissions": {"allow": ["WebFetch"]}}
        _write(ws.parent / "managed.json", managed)

        async def fetch() -> tuple[bool, str, list[str]]:
            async with shellrt.Runtime(
                ws, "local", session_dir=ws.parent / f"s{next(_ids)}", tools=[WebFetchTool()]
            ) as rt:
                [env] = await rt.run_envelopes(
                    [ToolUseBlock(id=f"g8m{next(_ids)}", name="WebFetch", input={"url": url})]
                )
                return env.is_error, envelope_text(env), list(rt.diagnostics)

        failed, text, diagnostics = await fetch()
        assert failed and "METADATA" not in text and server.hits["/meta"] == 0, text
        assert any("allowPrivateHosts ignored" in d for d in diagnostics), diagnostics
        # without the policy the same user setting is obeyed (the test can fail)
        _write(ws.parent / "managed.json", {"permissions": {"allow": ["WebFetch"]}})
        failed, text, _ = await fetch()
        assert not failed and "METADATA" in text, text


async def test_a_lower_source_cannot_open_the_sandbox_network(ws: Path) -> None:
    """An ignored ``WebFetch(domain:…)`` allow rule fed the proxy's allow-list all the same."""
    _write(
        ws.parent / "managed.json",
        {**_MANAGED, "permissions": {"allow": ["WebFetch(domain:managed.example)"]}},
    )
    _write(
        _user(ws),
        {
            "permissions": {"allow": ["WebFetch(domain:user.example)"]},
            "sandbox": {"network": {"allowedDomains": ["net.example"], "deniedDomains": ["bad.example"]}},
        },
    )
    async with shellrt.Runtime(
        ws, "local", session_dir=ws.parent / f"s{next(_ids)}", allowed_domains=["flag.example"]
    ) as rt:
        assert rt.policy.allowed_domains == ("managed.example",), rt.policy.allowed_domains
        assert "bad.example" in rt.policy.denied_domains  # narrowing still applies
        for what in ("sandbox.network.allowedDomains", "--allow-domain flag.example"):
            assert any(what in d and "allowManagedPermissionRulesOnly" in d for d in rt.diagnostics), (
                rt.diagnostics
            )
    _write(ws.parent / "managed.json", {})  # without the policy all of them count (the test can fail)
    async with shellrt.Runtime(
        ws, "local", session_dir=ws.parent / f"s{next(_ids)}", allowed_domains=["flag.example"]
    ) as rt:
        assert set(rt.policy.allowed_domains) == {"flag.example", "net.example", "user.example"}


async def test_a_lower_source_cannot_unmask_the_default_secrets(ws: Path) -> None:
    _write(ws.parent / "managed.json", _MANAGED)
    _write(_user(ws), {"sandbox": {"unmaskDefaults": True}})
    ssh = ws.parent / "home" / ".ssh"
    async with shellrt.Runtime(ws, "local", session_dir=ws.parent / f"s{next(_ids)}") as rt:
        assert ssh in rt.policy.read_denied, rt.policy.read_denied
        assert any("sandbox.unmaskDefaults ignored" in d for d in rt.diagnostics), rt.diagnostics
    _write(ws.parent / "managed.json", {})  # without the policy the user may unmask (the test can fail)
    async with shellrt.Runtime(ws, "local", session_dir=ws.parent / f"s{next(_ids)}") as rt:
        assert ssh not in rt.policy.read_denied, rt.policy.read_denied
