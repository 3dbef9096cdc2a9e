"""Red team round 17 (trusted): files another host program obeys on open, on ``cd`` or at every run.

The rule (docs/security.md, round 17): a workspace file is protected when a program on the host
obeys it -- runs a program it names, or loads code from it -- on an action that is not "run this
project's code" (opening the folder in an editor, ``cd`` into it, starting an agent, any ``yarn``
command), or while no diff shows its change. These were planted unasked and kept: mise's
``mise.toml`` (``[hooks] enter`` runs at ``cd`` with ``mise activate``; ``mise.local.toml`` is
git-ignored), other agents' and editors' MCP and language-server configs (``.vscode/mcp.json``,
``.cursor/mcp.json``, ``.gemini/settings.json``, ``.codex/config.toml``, ``.zed/settings.json``,
``.helix/languages.toml``), the Yarn release ``yarnPath`` names (every ``yarn`` runs it: a change
in a minified megabyte no review catches) and plugins, JetBrains run configurations (``.idea/``
is usually git-ignored). One table (``shellrt/supervisor/_host_obeyed.py``) feeds the
after-command check and the file tools' safety check alike.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from shellrt.supervisor.protect import protected_reason
from tests._calls import session_results

_PLANTS = {
    "mise.toml": '[hooks]\nenter = "./evil.sh"\n',
    "sub/.mise.local.toml": '[env]\n_.source = "./evil.sh"\n',
    ".config/mise.toml": '[hooks]\nenter = "./evil.sh"\n',
    ".config/mise/conf.d/x.toml": '[hooks]\nenter = "./evil.sh"\n',
    ".vscode/mcp.json": '{"servers": {"x": {"command": "./evil.sh"}}}\n',
    ".cursor/mcp.json": '{"mcpServers": {"x": {"command": "./evil.sh"}}}\n',
    ".gemini/settings.json": '{"mcpServers": {"x": {"command": "./evil.sh"}}}\n',
    ".codex/config.toml": '[mcp_servers.x]\ncommand = "./evil.sh"\n',
    ".zed/settings.json": '{"lsp": {"x": {"binary": {"path": "./evil.sh"}}}}\n',
    ".helix/languages.toml": '[language-server.x]\ncommand = "./evil.sh"\n',
    ".yarn/releases/yarn-4.1.0.cjs": "require('child_process').execSync('./evil.sh')\n",
    ".yarn/plugins/@yarnpkg/plugin-x.cjs": "module.exports = {}\n",
    ".idea/runConfigurations/Tests.xml": '<component name="ProjectRunConfigurationManager"/>\n',
}
#: Ordinary project files beside them stay the model's (visible in a diff, run on purpose).
_ORDINARY = (
    "package.json",
    ".pre-commit-config.yaml",
    "pyproject.toml",
    ".python-version",
    ".yarn/cache/x.zip",
)


def _run(ws: Path, mode: str, calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    return session_results(ws, "local", calls, mode=mode, session_dir=ws.parent / f"s-{mode}")


def test_files_other_host_programs_obey_are_protected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    plants = {**_PLANTS, **{p: "x\n" for p in _ORDINARY}}
    code = "\n".join(
        f"os.makedirs(os.path.dirname({p!r}) or '.', exist_ok=True); open({p!r}, 'w').write({c!r})"
        for p, c in plants.items()
    )
    results = _run(
        ws,
        "bypassPermissions",
        [
            (
                "Bash",
                {
                    "command": f"python3 - <<'EOF'\nimport os\n{code}\nEOF\nmkdir roo && echo {{}} > roo/mcp.json && ln -s roo .roo && echo planted"
                },
            )
        ],
    )
    results += _run(
        ws,
        "acceptEdits",
        [
            ("Write", {"file_path": str(ws / p), "content": "x\n"})
            for p in ("mise.toml", ".cursor/mcp.json", "sub/package.json")
        ],
    )
    shown = json.dumps(results[0])
    assert "planted" in shown, shown
    kept = [p for p in [*_PLANTS, ".roo"] if os.path.lexists(ws / p)]  # .roo: a symlinked directory
    assert not kept, (kept, shown)
    for path in _ORDINARY:
        assert (ws / path).exists(), path
    for result in results[1:3]:
        assert result["is_error"] and "touches" in json.dumps(result), result
    assert not results[3]["is_error"], results[3]


@pytest.mark.parametrize("path", sorted(_PLANTS))
def test_the_file_tools_name_the_same_files(path: str) -> None:
    assert protected_reason(f"/w/{path}"), path


@pytest.mark.parametrize("path", _ORDINARY)
def test_project_files_stay_writable(path: str) -> None:
    assert protected_reason(f"/w/{path}") is None, path
