"""Red team round 12 (left-over): extra writable roots through a symlink the repository planted.

Round 11 refused ``--writable ./build`` when ``build`` is a symbolic link inside the workspace
(``build -> ~/.ssh``): the repository chose where it points. Every other source of an extra
writable root resolved the link silently: ``permissions.additionalDirectories`` (an operator's
``--settings`` file, a trusted project file) and ``SandboxPolicy.writable_roots`` given through
the Python API (``Runtime(policy=...)``, what the serve and MCP front ends build). The host
directory behind the link became writable to every command. Now the same component-by-component
check applies to every root a policy holds (``sandbox.policy``): an operator's source refuses the
session naming the real path to pass; a workspace settings file cannot stop the session, its root
is dropped with a diagnostic. Failed before: the command wrote ``authorized_keys`` on the host.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

import pytest

import shellrt
from sandbox.policy import SandboxPolicy
from tests._bwrap_session import require_bwrap
from tests._governance import trust_env

pytestmark = pytest.mark.anyio


def _layout(tmp_path: Path) -> tuple[Path, Path]:
    """``repo/build -> secret`` (a host directory outside the workspace); the repo and the secret dir."""
    repo = tmp_path / "repo"
    repo.mkdir()
    secret = tmp_path / "host" / "keys"
    secret.mkdir(parents=True)
    (repo / "build").symlink_to(secret)
    return repo, secret


async def _bash(rt: shellrt.Runtime, command: str) -> list[dict[str, Any]]:
    block = {
        "type": "tool_use",
        "id": "rt-" + secrets.token_hex(6),
        "name": "Bash",
        "input": {"command": command},
    }
    out: list[dict[str, Any]] = (await rt.run([block]))["content"]
    return out


def _operator_settings(tmp_path: Path, dirs: list[str]) -> Path:
    path = tmp_path / "operator-settings.json"
    path.write_text(json.dumps({"permissions": {"allow": ["Bash"], "additionalDirectories": dirs}}))
    return path


@pytest.mark.parametrize("how", ["settings", "policy", "nested"])
async def test_an_operator_root_through_a_repo_link_refuses_the_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """Failed on the old code: the session started and the command wrote into ``secret``."""
    require_bwrap()
    trust_env(tmp_path, monkeypatch)
    repo, secret = _layout(tmp_path)
    (repo / "sub").mkdir()
    named = repo / "build" if how != "nested" else repo / "sub" / ".." / "build"
    settings = _operator_settings(tmp_path, [str(named)]) if how != "policy" else None
    wrote: list[dict[str, Any]] = []
    with pytest.raises(ValueError) as caught:  # the policy itself refuses: every front end builds one
        policy = SandboxPolicy(workspace=repo, writable_roots=(named,)) if how == "policy" else None
        async with shellrt.Runtime(
            repo,
            "bwrap",
            session_dir=tmp_path / "session",
            settings_files=[settings] if settings else [],
            policy=policy,
        ) as rt:
            wrote = await _bash(rt, f"echo planted > {repo}/build/authorized_keys")
    assert not (secret / "authorized_keys").exists(), wrote
    message = str(caught.value)
    assert "symbolic link inside the workspace" in message, message
    assert str(secret) in message, message  # the real path to pass instead


async def test_the_real_path_is_still_a_writable_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the operator means, named by its real path, stays writable (the check refuses only links)."""
    require_bwrap()
    trust_env(tmp_path, monkeypatch)
    repo, secret = _layout(tmp_path)
    settings = _operator_settings(tmp_path, [str(secret)])
    async with shellrt.Runtime(
        repo, "bwrap", session_dir=tmp_path / "session", settings_files=[settings]
    ) as rt:
        out = await _bash(rt, f"echo meant > {secret}/known_hosts")
    assert (secret / "known_hosts").read_text() == "meant\n", out


async def test_a_trusted_project_file_cannot_open_a_host_dir_through_a_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A workspace settings file naming ``./build``: the root is dropped with a diagnostic, the
    session still runs, the command cannot write the host directory."""
    require_bwrap()
    trust_env(tmp_path, monkeypatch)
    repo, secret = _layout(tmp_path)
    (repo / ".claude").mkdir()
    (repo / ".claude" / "settings.json").write_text(
        json.dumps({"permissions": {"allow": ["Bash"], "additionalDirectories": ["./build"]}})
    )
    async with shellrt.Runtime(repo, "bwrap", session_dir=tmp_path / "session", trust_workspace=True) as rt:
        out = await _bash(
            rt, f"echo planted > {secret}/authorized_keys; echo planted > {repo}/build/authorized_keys"
        )
        notes = list(rt.diagnostics)
    assert not (secret / "authorized_keys").exists(), out
    assert any("symbolic link inside the workspace" in n and str(secret) in n for n in notes), notes
