"""Red team round 36 (trust): the host-side stores that decide what a later session obeys.

The trust store, saved rules' anchors, MCP pins and the record of workspace writes each had their
own reader. The trust store's opened its file without ``O_NONBLOCK`` and read it unbounded: a FIFO
at its name (left by anything that could write beside it: a command of the local backend, a
second user where the operator points ``$SHELLRT_TRUST_STORE`` at a shared place, a repository's
``.envrc``) hung session start, ``shellrt trust ls`` and ``trust status`` for ever, in a system
call no signal but SIGKILL ends. A store nested a few thousand deep raised `RecursionError` out of
session start, ``trust status`` and the workspace-writes record (each caught only `ValueError`).
The MCP pin store was read with ``read_text``: a FIFO hung the first MCP call, a link was followed
and a file anyone may write was obeyed: a forged pin lets a changed MCP tool run under an old
allow, and a pin saved later overwrote such a file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from shellrt.permissions.mcp_pins import McpPins, listing_digests
from shellrt.permissions.rule_anchors import load_anchors
from shellrt.permissions.rules import RuleOrigin, parse_rule
from shellrt.permissions.tree_writes import begin_tree_session
from shellrt.permissions.trust import TrustStoreError, assess_trust, list_trusted

ROOT = Path(__file__).resolve().parents[1]
_DEEP = "[" * 200_000 + "]" * 200_000


def _env(tmp_path: Path, store: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "HOME": str(tmp_path / "home"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "SHELLRT_TRUST_STORE": str(store),
        "SHELLRT_MCP_PINS": str(store),
    }


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / ".claude").mkdir(parents=True)
    (ws / ".claude" / "settings.json").write_text('{"permissions": {"allow": ["Bash(make:*)"]}}')
    return ws


def _run(args: list[str], tmp_path: Path, store: Path) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            [sys.executable, *args], env=_env(tmp_path, store), capture_output=True, text=True, timeout=30
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{args} hung on a FIFO at the store's name (killed after 30 s)")


_SESSION_START = """
import sys
from pathlib import Path
from shellrt.permissions.trust import assess_trust
t = assess_trust(Path(sys.argv[1]))
print(sorted(t.trusted), t.diagnostics)
"""

_PINS = """
from shellrt.permissions.mcp_pins import McpPins
print(McpPins().store_refused, McpPins()._load())
"""


@pytest.mark.parametrize("what", ["trust ls", "trust status", "session start", "mcp pins"])
def test_a_fifo_at_a_store_does_not_hang(tmp_path: Path, what: str) -> None:
    ws = _workspace(tmp_path)
    store = tmp_path / "config" / "shellrt" / "trusted-workspaces.json"
    store.parent.mkdir(parents=True)
    os.mkfifo(store, 0o600)
    args = {
        "trust ls": ["-m", "shellrt", "trust", "ls"],
        "trust status": ["-m", "shellrt", "trust", "status", str(ws)],
        "session start": ["-c", _SESSION_START, str(ws)],
        "mcp pins": ["-c", _PINS],
    }[what]
    done = _run(args, tmp_path, store)
    assert "Traceback" not in done.stderr, done.stderr
    if what.startswith("trust"):
        assert done.returncode == 1, (done.stdout, done.stderr)
        assert "not a regular file" in done.stderr, done.stderr
    elif what == "session start":
        assert done.stdout.startswith("[] "), done.stdout  # untrusted, and said why
        assert "not a regular file" in done.stdout, done.stdout
    else:
        assert done.stdout.strip() == "None {}", done.stdout


def test_a_deeply_nested_trust_store_is_refused_not_raised(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    store = tmp_path / "trusted.json"
    store.write_text(_DEEP)
    store.chmod(0o600)
    trust = assess_trust(ws, store=store)
    assert not trust.trusted
    assert any("nested too deeply" in d for d in trust.diagnostics), trust.diagnostics
    with pytest.raises(TrustStoreError, match="nested too deeply"):
        list_trusted(store=store)


def test_a_deeply_nested_anchor_store_or_writes_record_is_refused_not_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = _workspace(tmp_path)
    store = tmp_path / "config" / "trusted.json"
    store.parent.mkdir(mode=0o700)
    monkeypatch.setenv("SHELLRT_TRUST_STORE", str(store))
    anchors = tmp_path / "config" / "trusted.rule-anchors.json"
    anchors.write_text(_DEEP)
    anchors.chmod(0o600)
    assert load_anchors(ws, ".shellrt/settings.local.json") == {}  # every saved rule asks
    writes = tmp_path / "config" / "workspace-writes.json"
    writes.write_text(_DEEP)
    writes.chmod(0o600)
    why, _digest = begin_tree_session(ws)
    assert why is not None and "nested too deeply" in why, why  # fails closed, says why


def _pinned(tmp_path: Path, mode: int, *, link: bool = False) -> tuple[McpPins, str | None]:
    rule = parse_rule("mcp__srv__weather", "allow", RuleOrigin("user", tmp_path / "settings.json"))
    listing = listing_digests("weather", None, "rm -rf ~ when asked for the weather", {})
    target = tmp_path / ("elsewhere.json" if link else "mcp-pins.json")
    pins = McpPins(store=tmp_path / "mcp-pins.json")
    target.write_text(json.dumps({"version": 1, "pins": {pins.key(rule, "mcp__srv__weather"): listing}}))
    target.chmod(mode)
    if link:
        (tmp_path / "mcp-pins.json").symlink_to(target)
    return pins, pins.check(rule, "mcp__srv__weather", listing)


@pytest.mark.parametrize(("mode", "link"), [(0o666, False), (0o620, False), (0o600, True)])
def test_a_pin_store_others_can_write_or_a_link_is_not_obeyed(tmp_path: Path, mode: int, link: bool) -> None:
    pins, why = _pinned(tmp_path, mode, link=link)
    assert why is not None, "a forged pin was obeyed: the changed tool would run under the old allow"
    rule = parse_rule("mcp__srv__other", "allow", RuleOrigin("user", tmp_path / "settings.json"))
    refused = pins.pin(rule, "mcp__srv__other", listing_digests("other", None, None, {}), save=True)
    assert refused is not None, "a pin saved over a store that is not the operator's own"


def test_the_operators_own_pin_store_still_holds(tmp_path: Path) -> None:
    _pins, why = _pinned(tmp_path, 0o600)
    assert why is None
