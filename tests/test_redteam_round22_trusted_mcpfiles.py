"""Red team round 22 (trusted): a trusted workspace's MCP server, its script changed by a ``git pull``.

A trusted ``.mcp.json`` (or ``mcpServers`` of ``.claude/settings.json``) starts a stdio server on
the host, as the operator, from a script of the repository (``python3 tools/srv.py``). The trust
store recorded the settings file's digest and the files its *hooks* run, not the files its
servers run: after a ``git pull`` (or a checkout) that changed only ``tools/srv.py``, the settings
file was still trusted and the next session started the new script on the host, unasked. Trust
now records what a trusted file's stdio servers run as it does for hooks (`hook_files`); a
changed file untrusts the settings file, which then keeps only its deny and ask rules, and the
notice says which file changed and to run ``shellrt trust add`` again.
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
from shellrt.permissions.trust import record_trust
from tests._governance import trust_env
from tests._mcp_support import TEST_SERVER

pytestmark = pytest.mark.anyio

#: The packages this interpreter found, for the server and the CLI (uid 65534 finds none of its own).
_PATH = os.pathsep.join([str(Path(__file__).resolve().parent.parent), *filter(None, sys.path)])
_SERVER = f"import runpy\nrunpy.run_path({str(TEST_SERVER)!r}, run_name='__main__')\n"


def _pulled(marker: Path) -> str:
    """What the teammate's commit makes the script: code that runs as whoever starts it."""
    return f"open({str(marker)!r}, 'w').write('ran on the host')\n" + _SERVER


def _repo(tmp_path: Path, shape: str) -> Path:
    repo = tmp_path / "repo"
    (repo / "tools").mkdir(parents=True)
    (repo / "tools" / "srv.py").write_text(_SERVER)
    if shape == "mcp.json":  # the script by its absolute path
        server = {"command": sys.executable, "args": [str(repo / "tools" / "srv.py")], "alwaysLoad": True,
                  "env": {"PYTHONPATH": _PATH}}
        (repo / ".mcp.json").write_text(json.dumps({"mcpServers": {"srv": server}}))
    else:  # a server's own cwd in the repository and a relative script
        server = {"command": sys.executable, "args": ["srv.py"], "cwd": str(repo / "tools"), "alwaysLoad": True,
                  "env": {"PYTHONPATH": _PATH}}
        (repo / ".claude").mkdir()
        body = {"mcpServers": {"srv": server}, "permissions": {"allow": ["mcp__srv"]}}
        (repo / ".claude" / "settings.json").write_text(json.dumps(body))
    return repo


def _trust(repo: Path, env: dict[str, str], by: str) -> None:
    if by == "api":
        record_trust(repo)
        return
    done = subprocess.run(
        [sys.executable, "-m", "shellrt", "trust", "add", str(repo)],
        env={**os.environ, **env, "PYTHONPATH": _PATH},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "tools/srv.py" in done.stdout, done.stdout  # the operator is shown what is recorded


async def _echo(repo: Path, session: Path) -> tuple[dict[str, Any], str]:
    async with shellrt.Runtime(repo, "local", mode="bypassPermissions", session_dir=session) as rt:
        block = {"type": "tool_use", "id": "m-" + secrets.token_hex(4), "name": "mcp__srv__echo",
                 "input": {"text": "hi"}}
        result: dict[str, Any] = (await rt.run([block]))["content"][0]
        return result, str(rt.governance.settings.trust_notice or "")


@pytest.mark.parametrize(("shape", "by"), [("mcp.json", "api"), ("settings.json", "cli")])
async def test_a_pulled_change_to_a_trusted_servers_script_is_not_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: str, by: str
) -> None:
    """Failed 2 of 2 before: the marker was written by the next session's server."""
    env = trust_env(tmp_path, monkeypatch)
    repo = _repo(tmp_path, shape)
    _trust(repo, env, by)
    first, notice = await _echo(repo, tmp_path / "s1")
    assert not first.get("is_error"), first  # trusted as reviewed: the server runs
    assert not notice, notice
    marker = tmp_path / "outside" / "pwned"
    marker.parent.mkdir()
    (repo / "tools" / "srv.py").write_text(_pulled(marker))  # `git pull`: only the script changed
    second, notice = await _echo(repo, tmp_path / "s2")
    assert not marker.exists(), "the next session started the changed server script on the host"
    assert second.get("is_error"), second
    assert "tools/srv.py changed since the workspace was trusted" in notice, notice
    assert "shellrt trust add" in notice, notice
    if by == "api":  # reviewed again: obeyed again (one variant: each session starts a server)
        _trust(repo, env, by)
        third, notice = await _echo(repo, tmp_path / "s3")
        assert marker.exists() and not third.get("is_error"), third


def test_a_server_run_from_a_package_records_nothing_of_the_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The false-positive side: ``npx -y pkg`` / ``uvx pkg`` run no file of the repository, so a
    workspace trusted before this round stays trusted, and a pull that changes the root's
    ``README.md`` (or a file named like the package) does not untrust the file."""
    from shellrt.permissions.sources import load_settings
    from shellrt.permissions.trust import trust_store_path

    trust_env(tmp_path, monkeypatch)
    monkeypatch.chdir(tmp_path)
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "README.md").write_text("v1\n")
    servers = {
        "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv"]},
        "git": {"command": "uvx", "args": ["mcp-server-git"]},
    }
    (repo / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))
    record_trust(repo)
    store = trust_store_path()
    data = json.loads(store.read_text())
    assert data["workspaces"][str(repo)]["hooks"][".mcp.json"]["files"] == {}, data
    data["workspaces"][str(repo)].pop("hooks")  # as a store written before this round
    store.write_text(json.dumps(data))
    (repo / "README.md").write_text("v2\n")
    (repo / "mcp-server-git").write_text("not what uvx runs\n")
    settings = load_settings(repo)
    assert sorted(settings.mcp_servers) == ["fs", "git"], settings.diagnostics
    assert not settings.trust_notice, settings.trust_notice
