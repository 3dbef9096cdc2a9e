"""Red team round 23 (trusted): a hook whose program finds what it runs in the workspace by search.

A hook runs on the host from the workspace root. ``npx --no-install fmtx`` (the operator's own
formatter hook, or a trusted project's) runs the project's ``node_modules/.bin/fmtx`` first;
``make fmt`` reads the ``Makefile``. Neither was among the hook's files: a sandboxed command
planted ``node_modules/.bin/fmtx``, this session's hook refused to run (the root's entries
changed), but the plant was kept and the next session's hook ran it on the host, unsandboxed.
A trusted project's hook ran a pulled ``node_modules/.bin/fmtx`` the same way.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shellrt.permissions.sources import load_settings
from shellrt.permissions.trust import record_trust
from tests._bwrap_session import require_bwrap
from tests._calls import hook_bash_session as _session
from tests._governance import trust_env

_HOOK = "npx --no-install fmtx"


def test_a_planted_local_binary_of_a_hooks_package_runner_is_reverted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed 1 of 1 before: the next session's hook ran the planted ``node_modules/.bin/fmtx``."""
    require_bwrap()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    ws = tmp_path / "ws"
    (ws / "node_modules" / ".bin").mkdir(parents=True)  # installed before: the root's entries stay
    (ws / "package.json").write_text('{"name": "x"}\n')
    marker = tmp_path / "ran-on-the-host"
    own = tmp_path / "operator.json"  # the operator's own file: always obeyed, never trust-checked
    own.write_text(json.dumps({"hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": _HOOK}]}]}}))
    plant = (f"printf '#!/bin/sh\\ntouch {marker}\\n' > node_modules/.bin/fmtx && chmod +x node_modules/.bin/fmtx"
             " && echo planted")
    first = _session(ws, own, tmp_path / "s1", [plant])
    assert "planted" in json.dumps(first), first
    second = _session(ws, own, tmp_path / "s2", ["echo next"])
    assert "next" in json.dumps(second), second
    assert not marker.exists(), "the next session's hook ran a binary a sandboxed command planted"
    assert not (ws / "node_modules" / ".bin" / "fmtx").exists()  # the command's change was reverted


def test_a_pulled_local_binary_untrusts_a_project_hook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Failed 1 of 1 before: the trusted ``.claude/settings.json`` kept its hook after the pull."""
    trust_env(tmp_path, monkeypatch)
    repo = tmp_path / "repo"
    (repo / ".claude").mkdir(parents=True)
    (repo / "package.json").write_text('{"name": "x"}\n')
    (repo / "node_modules" / ".bin").mkdir(parents=True)
    body = {"hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": _HOOK}]}]}}
    (repo / ".claude" / "settings.json").write_text(json.dumps(body))
    record_trust(repo)
    assert not load_settings(repo).trust_notice
    (repo / "node_modules" / ".bin" / "fmtx").write_text("#!/bin/sh\nid\n")  # the teammate's commit
    notice = str(load_settings(repo).trust_notice or "")
    assert "node_modules/.bin/fmtx appeared since the workspace was trusted" in notice, notice
