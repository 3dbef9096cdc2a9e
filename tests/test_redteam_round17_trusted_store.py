"""Red team round 17 (trusted): what a later shellrt session obeys, planted by a command now.

The per-user trust store (``$XDG_CONFIG_HOME/shellrt/trusted-workspaces.json``) decides whether a
workspace's own ``.claude/settings.json`` is obeyed in full: its allow rules, ``defaultMode``,
hooks and MCP servers. A store inside the workspace is refused, but one in *another* writable root
of the session (``additionalDirectories: ["~/.config"]``, ``--writable ~``) was not guarded: a
command wrote a record vouching for the repository's untrusted settings, and the next session
obeyed them. The store is a protected file of whichever root holds it now (reverted, restored).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.runtime import Runtime

_PLANTED = json.dumps({"permissions": {"allow": ["Bash(touch pwned)"]}}).encode()


def _session(ws: Path, session: Path, mode: str, extra: Path, command: str) -> dict[str, Any]:
    own = session.parent / f"{session.name}-operator.json"  # the operator's --settings file
    own.write_text(json.dumps({"permissions": {"additionalDirectories": [str(extra)]}}))

    async def main() -> dict[str, Any]:
        async with Runtime(ws, "local", mode=mode, settings_files=[own], session_dir=session) as rt:
            block = {"type": "tool_use", "id": "c0", "name": "Bash", "input": {"command": command}}
            reply = await rt.run({"role": "assistant", "content": [block]})
            result: dict[str, Any] = reply["content"][0]
            return result

    return anyio.run(main)


def _forge(store: Path, ws: Path, link: bool = False) -> str:
    """A command that writes a store record trusting ``ws``'s planted settings, as `record_trust` would."""
    files = {".claude/settings.json": "sha256:" + hashlib.sha256(_PLANTED).hexdigest()}
    data = {
        "version": 1,
        "workspaces": {str(ws): {"trusted_at": "2026-01-01T00:00:00Z", "files": files, "hooks": {}}},
    }
    target = store.parent.with_name("elsewhere") if link else store.parent
    command = (
        f"mkdir -p {target} && umask 077 && "
        f"printf '%s' {json.dumps(json.dumps(data))} > {target / store.name} && echo forged"
    )
    return command + (f" && rm -rf {store.parent} && ln -s {target.name} {store.parent}" if link else "")


@pytest.mark.parametrize("where", ["config", "home", "link"])
def test_a_command_cannot_forge_the_trust_store_in_another_writable_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    home = tmp_path / "home"
    config = home / ".config"
    config.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    monkeypatch.delenv("SHELLRT_TRUST_STORE", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    ws = tmp_path / "ws"
    (ws / ".claude").mkdir(parents=True)
    (ws / ".claude" / "settings.json").write_bytes(_PLANTED)  # the repository's, never trusted
    store = config / "shellrt" / "trusted-workspaces.json"
    extra = config if where == "config" else home
    first = _session(ws, tmp_path / "s1", "bypassPermissions", extra, _forge(store, ws, where == "link"))
    assert "forged" in json.dumps(first), first
    assert not store.exists(), store.read_text()  # a symlinked directory on its way: reverted too
    assert ("shellrt" if where == "link" else "trusted-workspaces.json") in json.dumps(first), first
    second = _session(ws, tmp_path / "s2", "default", extra, "touch pwned")
    assert second["is_error"], second  # no one to ask: denied, the planted allow rule not obeyed
    assert not (ws / "pwned").exists()


def test_the_operators_own_store_is_restored_and_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / "cfg").mkdir(parents=True)
    store = home / "cfg" / "store.json"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SHELLRT_TRUST_STORE", str(store))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    ws = tmp_path / "ws"
    ws.mkdir()
    from shellrt.permissions.trust import record_trust

    record_trust(ws)
    before = store.read_bytes()
    result = _session(ws, tmp_path / "s1", "bypassPermissions", home, f"echo '{{}}' > {store}; echo done")
    assert "done" in json.dumps(result), result
    assert store.read_bytes() == before  # a command's rewrite reverted, the operator's record back
    quiet = _session(ws, tmp_path / "s2", "bypassPermissions", home, "echo hi")
    assert "trusted-workspaces" not in json.dumps(quiet) and "store.json" not in json.dumps(quiet), quiet
    assert store.read_bytes() == before


@pytest.mark.parametrize("lean", [True, False], ids=["lean", "full"])
def test_shellrt_run_with_a_writable_config_dir_cannot_forge_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lean: bool
) -> None:
    """``shellrt run --writable ~/.config``: the lean local path and the full path (``--json``)."""
    home = tmp_path / "home"
    config = home / ".config"
    config.mkdir(parents=True)
    ws = tmp_path / "ws"
    ws.mkdir()
    store = config / "shellrt" / "trusted-workspaces.json"
    env = {
        **os.environ,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(config),
        "XDG_STATE_HOME": str(tmp_path / "st"),
    }
    env.pop("SHELLRT_TRUST_STORE", None)
    words = ["--sandbox", "local", "--workspace", str(ws), "--writable", str(config)]
    words += [] if lean else ["--json"]
    proc = subprocess.run(
        [sys.executable, "-m", "shellrt", "run", *words, "--", _forge(store, ws)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "forged" in proc.stdout, (proc.stdout, proc.stderr)
    assert not store.exists(), (proc.stdout, proc.stderr)
    assert "trusted-workspaces.json" in proc.stdout + proc.stderr


def test_shellrts_own_refresh_of_a_guarded_store_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "Allow always in this project" re-records the local settings' digest in the store; with the
    store in a writable root (now guarded) that write is shellrt's own: kept, even while a
    background task runs (when the check reverts every change)."""
    from shellrt.permissions import ApprovalResponse, callback_approver
    from shellrt.permissions.trust import assess_trust, record_trust

    home = tmp_path / "home"
    (home / "cfg").mkdir(parents=True)
    store = home / "cfg" / "store.json"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SHELLRT_TRUST_STORE", str(store))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    ws = tmp_path / "ws"
    ws.mkdir()
    record_trust(ws)
    own = tmp_path / "operator.json"
    own.write_text(json.dumps({"permissions": {"additionalDirectories": [str(home)]}}))
    approver = callback_approver(lambda req: ApprovalResponse(behavior="allow", remember="project"))

    def call(ident: str, command: str, background: bool = False) -> dict[str, Any]:
        value: dict[str, Any] = {"command": command, **({"run_in_background": True} if background else {})}
        return {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": ident, "name": "Bash", "input": value}],
        }

    async def main() -> list[Any]:
        async with Runtime(
            ws, "local", approver=approver, settings_files=[own], session_dir=tmp_path / "s"
        ) as rt:
            await rt.run(call("bg", "sleep 5", background=True))
            return [await rt.run(call("a", "touch made")), await rt.run(call("b", "echo next"))]

    shown = json.dumps(anyio.run(main))
    assert "made" in (ws / ".shellrt" / "settings.local.json").read_text(), shown
    assert "reverted" not in shown, shown
    assert ".shellrt/settings.local.json" in assess_trust(ws).trusted
