"""Red team round 11: a stdio MCP server must not load code from a directory commands write.

A stdio server from settings runs on the host, started by shellrt. With no ``cwd`` configured it
inherited shellrt's, usually the (hostile, sandbox-writable) repository: a Python server started
with ``-c``/``-m`` has that directory first on ``sys.path``, so a ``json.py`` a command planted
there ran on the host at the server's first ``import json``. Such a server now starts in the
user's home, and every stdio server gets ``PYTHONSAFEPATH=1``.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import sys
from pathlib import Path
from typing import Any

import pytest

import shellrt
from sandbox.policy import SandboxPolicy
from shellrt.tools.mcp._launch import launch_cwd
from shellrt.tools.mcp.config import StdioServerConfig
from tests._bwrap_session import require_bwrap
from tests._governance import trust_env
from tests._mcp_support import TEST_SERVER

pytestmark = pytest.mark.anyio

#: Runs the test server through ``-c`` (``sys.path[0]`` is the working directory then).
_BY_C = f"import runpy; runpy.run_path({str(TEST_SERVER)!r}, run_name='__main__')"


async def _call(rt: shellrt.Runtime, name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    block = {"type": "tool_use", "id": "mc-" + secrets.token_hex(6), "name": name, "input": tool_input}
    result: dict[str, Any] = (await rt.run([block]))["content"][0]
    return result


def _settings(tmp_path: Path, server: dict[str, Any]) -> Path:
    settings = tmp_path / "operator-settings.json"
    permissions = {"allow": ["Bash", "mcp__w"]}
    settings.write_text(json.dumps({"mcpServers": {"w": server}, "permissions": permissions}))
    return settings


async def test_a_module_planted_in_the_workspace_is_not_imported_by_a_restarted_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed on the old code: the restarted server imported the planted ``json.py`` from its
    inherited working directory (the workspace) and wrote the marker on the host."""
    require_bwrap()
    trust_env(tmp_path, monkeypatch)
    repo = tmp_path / "repo"
    repo.mkdir()
    monkeypatch.chdir(repo)  # shellrt started in the repository, as a CLI user does
    marker = tmp_path / "outside" / "pwned"
    marker.parent.mkdir()
    planted = f"open({str(marker)!r}, 'w').write('host')\nraise ImportError('planted')\n"
    plant = f"echo {base64.b64encode(planted.encode()).decode()} | base64 -d > json.py"
    settings = _settings(tmp_path, {"command": sys.executable, "args": ["-c", _BY_C], "alwaysLoad": True})
    session = tmp_path / "session"
    async with shellrt.Runtime(repo, "bwrap", session_dir=session, settings_files=[settings]) as rt:
        assert not (await _call(rt, "mcp__w__echo", {"text": "hi"})).get("is_error")
        assert not (await _call(rt, "Bash", {"command": plant})).get("is_error")
        assert (repo / "json.py").read_text() == planted
        assert (await _call(rt, "mcp__w__crash", {}))["is_error"]
        again = await _call(rt, "mcp__w__echo", {"text": "hi"})
    assert not marker.exists(), "a restarted MCP server imported a module a sandboxed command planted"
    assert not again.get("is_error"), again  # it restarted, from a directory commands cannot write


async def test_pythonsafepath_is_set_even_for_a_configured_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A configured ``cwd`` is the operator's choice and kept, but it is never put on ``sys.path``.
    Failed on the old code (the planted module ran)."""
    trust_env(tmp_path, monkeypatch)
    repo = tmp_path / "repo"
    repo.mkdir()
    marker = tmp_path / "pwned"
    (repo / "json.py").write_text(f"open({str(marker)!r}, 'w').write('host')\nraise ImportError('planted')\n")
    server = {"command": sys.executable, "args": ["-c", _BY_C], "cwd": str(repo), "alwaysLoad": True}
    settings = _settings(tmp_path, server)
    async with shellrt.Runtime(repo, "local", session_dir=tmp_path / "s", settings_files=[settings]) as rt:
        result = await _call(rt, "mcp__w__echo", {"text": "hi"})
    assert not marker.exists()
    assert not result.get("is_error"), result


def test_where_a_server_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its own ``cwd``; else ours outside every writable root; else home; else ``/``."""
    home, repo, other = tmp_path / "home", tmp_path / "repo", tmp_path / "other"
    for d in (home, repo, other):
        d.mkdir()
    monkeypatch.setenv("HOME", str(home))
    plain = StdioServerConfig(command="srv")
    assert launch_cwd(StdioServerConfig(command="srv", cwd=str(repo)), [repo]) == str(repo)
    monkeypatch.chdir(other)
    assert launch_cwd(plain, [repo]) == str(other)
    monkeypatch.chdir(repo / ".")
    assert launch_cwd(plain, [repo]) == str(home)
    assert launch_cwd(plain, [repo, home]) == "/"
    (repo / "sub").mkdir()
    os.symlink(repo / "sub", other / "link")
    monkeypatch.chdir(other / "link")  # a link into a writable root is that root
    assert launch_cwd(plain, [repo]) == str(home)


def test_a_writable_root_of_the_policy_counts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--writable`` roots are roots commands write as much as the workspace."""
    home, repo, extra = tmp_path / "home", tmp_path / "repo", tmp_path / "extra"
    for d in (home, repo, extra):
        d.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(extra)
    roots = SandboxPolicy(workspace=repo, writable_roots=(extra,)).allowed_roots()
    assert launch_cwd(StdioServerConfig(command="srv"), roots) == str(home)
