"""An operator's ``--settings FILE`` inside the workspace is workspace content.

Any command may rewrite a file in the workspace between sessions, so such a
file is treated like the workspace's own settings: obeyed in full only when
trusted (``--trust-workspace``, or ``shellrt trust add DIR --settings FILE``,
which records its digest), else only its deny and ask rules apply; and during
a session it is a protected file (a command's change is reverted and said so).
Real `shellrt trust add` runs, a real store, real Bash commands (local backend).
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import shellrt
from shellrt.permissions import build_governance
from tests._governance import trust_env

pytestmark = pytest.mark.anyio

OPS: dict[str, Any] = {
    "permissions": {"allow": ["Bash(touch:*)"], "deny": ["Bash(rm:*)"], "defaultMode": "bypassPermissions"},
    "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}]},
}


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    return trust_env(tmp_path, monkeypatch)


def _files(tmp_path: Path) -> tuple[Path, Path]:
    ws = tmp_path / "ws"
    (ws / "conf").mkdir(parents=True)
    ops = ws / "conf" / "ops.json"
    ops.write_text(json.dumps(OPS))
    return ws, ops


def _kinds(ws: Path, ops: Path, **kw: Any) -> tuple[set[str], bool, str, str]:
    gov = build_governance(ws, settings_files=[ops], **kw)
    settings = gov.settings
    kinds = {f"{r.kind}:{r.text}" for r in settings.rules.rules if str(r.origin.file or "") == str(ops)}
    return kinds, bool(settings.hook_specs), settings.mode, "\n".join(gov.diagnostics)


def _trust(ws: Path, env: dict[str, str], *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "shellrt", "trust", "add", str(ws), *extra],
        env={**os.environ, **env, "PYTHONPATH": os.getcwd()},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_untrusted_settings_file_in_workspace_only_tightens(tmp_path: Path, env: dict[str, str]) -> None:
    ws, ops = _files(tmp_path)
    kinds, hooks, mode, diag = _kinds(ws, ops)
    assert "deny:Bash(rm:*)" in kinds, kinds
    assert "allow:Bash(touch:*)" not in kinds, kinds
    assert not hooks and mode != "bypassPermissions"
    assert "conf/ops.json" in diag and "trust add" in diag, diag


def test_settings_file_outside_workspace_is_the_operators(tmp_path: Path, env: dict[str, str]) -> None:
    ws, _ = _files(tmp_path)
    outside = tmp_path / "ops.json"
    outside.write_text(json.dumps(OPS))
    kinds, hooks, mode, _ = _kinds(ws, outside)
    assert "allow:Bash(touch:*)" in kinds and hooks and mode == "bypassPermissions"


def test_trust_flag_obeys_it(tmp_path: Path, env: dict[str, str]) -> None:
    ws, ops = _files(tmp_path)
    kinds, hooks, mode, _ = _kinds(ws, ops, trust_workspace=True)
    assert "allow:Bash(touch:*)" in kinds and hooks and mode == "bypassPermissions"


def test_trust_add_records_it_until_it_changes(tmp_path: Path, env: dict[str, str]) -> None:
    ws, ops = _files(tmp_path)
    plain = _trust(ws, env)
    assert plain.returncode == 0, plain.stderr
    assert "allow:Bash(touch:*)" not in _kinds(ws, ops)[0]  # the workspace, not this file
    done = _trust(ws, env, "--settings", str(ops))
    assert done.returncode == 0, done.stderr
    assert "conf/ops.json" in done.stdout, done.stdout
    kinds, hooks, mode, _ = _kinds(ws, ops)
    assert "allow:Bash(touch:*)" in kinds and hooks and mode == "bypassPermissions"
    ops.write_text(json.dumps({**OPS, "permissions": {**OPS["permissions"], "allow": ["Bash"]}}))
    kinds, hooks, mode, diag = _kinds(ws, ops)
    assert "allow:Bash" not in kinds and not hooks and "deny:Bash(rm:*)" in kinds
    assert "changed since" in diag, diag


def test_trust_add_refuses_a_file_outside_the_workspace(tmp_path: Path, env: dict[str, str]) -> None:
    ws, _ = _files(tmp_path)
    outside = tmp_path / "ops.json"
    outside.write_text("{}")
    done = _trust(ws, env, "--settings", str(outside))
    assert done.returncode != 0 and "inside" in done.stderr, done.stderr


async def test_command_rewriting_it_is_reverted(tmp_path: Path, env: dict[str, str]) -> None:
    ws, ops = _files(tmp_path)
    before = ops.read_bytes()
    block = {
        "type": "tool_use",
        "id": "gs-" + secrets.token_hex(6),
        "name": "Bash",
        "input": {"command": 'echo \'{"permissions":{"allow":["Bash"]}}\' > conf/ops.json'},
    }
    async with shellrt.Runtime(
        ws, "local", session_dir=tmp_path / "s", settings_files=[ops], trust_workspace=True
    ) as rt:
        out = (await rt.run([block]))["content"]
    text = json.dumps(out)
    assert ops.read_bytes() == before, ops.read_text()
    assert "reverted" in text and "ops.json" in text, text
