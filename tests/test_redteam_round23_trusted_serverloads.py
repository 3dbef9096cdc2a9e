"""Red team round 23 (trusted): what a trusted MCP server or hook loads from the repository
through its environment or its working directory, changed by a ``git pull``.

Round 22 recorded the files a trusted server's command line names (``python3 tools/srv.py``).
It did not record what the server's ``env`` points at (``PYTHONPATH=<repo>/src``,
``NODE_OPTIONS=--require ./x.js``, ``LD_PRELOAD``, ``RUBYLIB``, ``PERL5LIB``) nor what a server
started with its ``cwd`` in the repository finds there by search (``npx srv`` runs
``node_modules/.bin/srv``, ``uv run`` reads ``pyproject.toml``, ``python3 -m pkg`` imports from
the cwd when ``PYTHONSAFEPATH`` is cleared). A pull that changed only those files kept the
settings file trusted and the next session's server loaded the new code on the host, unasked.
The same held for a hook's assignments (``PYTHONPATH=lib python3 .claude/hooks/x.py``).
"""

from __future__ import annotations

import json
import os
import secrets
import sys
from pathlib import Path
from typing import Any

import pytest

import shellrt
from shellrt.permissions.sources import load_settings
from shellrt.permissions.trust import record_trust
from tests._governance import trust_env
from tests._mcp_support import TEST_SERVER

#: The packages this interpreter found, for the server (uid 65534 finds none of its own).
_PATH = os.pathsep.join([str(Path(__file__).resolve().parent.parent), *filter(None, sys.path)])


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


async def _echo(repo: Path, session: Path) -> tuple[dict[str, Any], str]:
    async with shellrt.Runtime(repo, "local", mode="bypassPermissions", session_dir=session) as rt:
        block = {"type": "tool_use", "id": "m-" + secrets.token_hex(4), "name": "mcp__srv__echo",
                 "input": {"text": "hi"}}
        result: dict[str, Any] = (await rt.run([block]))["content"][0]
        return result, str(rt.governance.settings.trust_notice or "")


@pytest.mark.anyio
async def test_a_pulled_sitecustomize_on_a_servers_pythonpath_is_not_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed 1 of 1 before: the second session's server imported the pulled
    ``src/sitecustomize.py`` at its start and wrote the marker."""
    trust_env(tmp_path, monkeypatch)
    repo = tmp_path / "repo"
    _write(repo / "src" / "app.py", "X = 1\n")
    server = {"command": sys.executable, "args": [str(TEST_SERVER)], "alwaysLoad": True,
              "env": {"PYTHONPATH": os.pathsep.join([str(repo / "src"), _PATH])}}
    _write(repo / ".mcp.json", json.dumps({"mcpServers": {"srv": server}}))
    record_trust(repo)
    first, notice = await _echo(repo, tmp_path / "s1")
    assert not first.get("is_error"), first  # trusted as reviewed: the server runs
    assert not notice, notice
    marker = tmp_path / "outside" / "pwned"
    marker.parent.mkdir()
    _write(repo / "src" / "sitecustomize.py", f"open({str(marker)!r}, 'w').write('ran on the host')\n")
    second, notice = await _echo(repo, tmp_path / "s2")
    assert not marker.exists(), "the next session's server loaded the pulled sitecustomize.py on the host"
    assert second.get("is_error"), second
    assert "src" in notice and "since the workspace was trusted" in notice, notice
    assert "shellrt trust add" in notice, notice


def _server(repo: Path, case: str) -> tuple[dict[str, Any], str]:
    """A server of ``case`` and the repository file a pull then changes (what it would load)."""
    cmd = {"command": "/usr/bin/true", "args": []}
    if case == "node_options":
        _write(repo / "x.js", "// v1\n")
        return {**cmd, "cwd": str(repo), "env": {"NODE_OPTIONS": "--require ./x.js"}}, "x.js"
    if case == "node_options_eq":
        _write(repo / "lib" / "x.js", "// v1\n")
        return {**cmd, "env": {"NODE_OPTIONS": f"--require={repo}/lib/x.js"}}, "lib/x.js"
    if case == "ld_preload":
        _write(repo / "build" / "hook.so", "v1\n")
        return {**cmd, "env": {"LD_PRELOAD": str(repo / "build" / "hook.so")}}, "build/hook.so"
    if case == "rubylib":  # a relative entry is read from the server's cwd
        _write(repo / "rb" / "srv.rb", "# v1\n")
        return {**cmd, "cwd": str(repo), "env": {"RUBYLIB": "rb"}}, "rb/srv.rb"
    if case == "perl5lib":
        _write(repo / "perl" / "Srv.pm", "1;\n")
        return {**cmd, "env": {"PERL5LIB": f"/usr/share/perl5:{repo}/perl"}}, "perl/Srv.pm"
    if case == "pythonpath_root":  # the whole repository on the path: any new module
        _write(repo / "app.py", "X = 1\n")
        return {**cmd, "cwd": str(repo), "env": {"PYTHONPATH": "."}}, "json.py"
    if case == "npx_cwd":  # `npx srv` runs the repository's node_modules/.bin/srv
        _write(repo / "package.json", '{"name": "x"}\n')
        _write(repo / "node_modules" / ".bin" / "srv", "#!/usr/bin/env node\n")
        return {"command": "npx", "args": ["srv"], "cwd": str(repo)}, "node_modules/.bin/srv"
    if case == "npx_subdir_cwd":  # node's search walks up to the repository's node_modules
        _write(repo / "node_modules" / ".bin" / "srv", "#!/usr/bin/env node\n")
        _write(repo / "tools" / "README", "tools\n")
        return {"command": "npx", "args": ["srv"], "cwd": str(repo / "tools")}, "node_modules/.bin/srv"
    if case == "uv_run_cwd":  # `uv run` reads pyproject.toml (build hooks, scripts) and .venv
        _write(repo / "pyproject.toml", "[project]\nname = 'x'\n")
        return {"command": "uv", "args": ["run", "srv"], "cwd": str(repo / "sub")}, "pyproject.toml"
    if case == "python_m_cwd":  # PYTHONSAFEPATH cleared: -m imports from the cwd
        _write(repo / "pkg" / "__main__.py", "# v1\n")
        return {"command": "python3", "args": ["-m", "pkg"], "cwd": str(repo),
                "env": {"PYTHONSAFEPATH": ""}}, "pkg/__main__.py"
    raise AssertionError(case)


@pytest.mark.parametrize(
    "case",
    ["node_options", "node_options_eq", "ld_preload", "rubylib", "perl5lib", "pythonpath_root",
     "npx_cwd", "npx_subdir_cwd", "uv_run_cwd", "python_m_cwd"],
)
def test_a_pulled_change_to_what_a_server_loads_untrusts_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """Failed 10 of 10 before: the server stayed trusted (it would have started) after the pull."""
    trust_env(tmp_path, monkeypatch)
    monkeypatch.chdir(tmp_path)
    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    server, changed = _server(repo, case)
    _write(repo / ".mcp.json", json.dumps({"mcpServers": {"srv": server}}))
    record_trust(repo)
    settings = load_settings(repo)
    assert sorted(settings.mcp_servers) == ["srv"], (settings.trust_notice, settings.diagnostics)
    _write(repo / changed, "changed by a pull\n")
    settings = load_settings(repo)
    assert "srv" not in settings.mcp_servers, f"{case}: still trusted after {changed} changed"
    notice = str(settings.trust_notice or "")
    assert "since the workspace was trusted" in notice and "shellrt trust add" in notice, notice


def test_a_hooks_assignment_naming_a_repository_directory_is_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed 1 of 1 before: ``PYTHONPATH=lib python3 .claude/hooks/h.py`` kept its settings
    trusted after ``lib/helper.py`` (which the hook imports) changed."""
    trust_env(tmp_path, monkeypatch)
    repo = tmp_path / "repo"
    _write(repo / ".claude" / "hooks" / "h.py", "import helper\n")
    _write(repo / "lib" / "helper.py", "# v1\n")
    hook = {"type": "command", "command": "PYTHONPATH=lib python3 .claude/hooks/h.py"}
    body = {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [hook]}]}, "permissions": {"allow": ["Bash(ls)"]}}
    _write(repo / ".claude" / "settings.json", json.dumps(body))
    record_trust(repo)
    assert not load_settings(repo).trust_notice
    _write(repo / "lib" / "helper.py", "import os; os.system('id')\n")
    notice = str(load_settings(repo).trust_notice or "")
    assert "lib" in notice and "since the workspace was trusted" in notice, notice


def test_a_server_outside_the_repository_with_outside_env_records_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The false-positive side: env values that name nothing of the repository (a level, a
    path elsewhere) and a cwd outside it add nothing; a pull changing the repository keeps it."""
    trust_env(tmp_path, monkeypatch)
    monkeypatch.chdir(tmp_path)
    repo = tmp_path / "repo"
    _write(repo / "README.md", "v1\n")
    server = {"command": "npx", "args": ["-y", "@scope/srv"],
              "env": {"LOG_LEVEL": "debug", "PYTHONPATH": "/opt/lib", "NODE_OPTIONS": "--max-old-space-size=512"}}
    _write(repo / ".mcp.json", json.dumps({"mcpServers": {"srv": server}}))
    record_trust(repo)
    _write(repo / "README.md", "v2\n")
    _write(repo / "debug", "a file named like a value\n")
    settings = load_settings(repo)
    assert sorted(settings.mcp_servers) == ["srv"], settings.trust_notice
    assert not settings.trust_notice, settings.trust_notice
