"""Red team round 18 (trusted): what a hook or server script loads beside itself, for the next session.

Round 17 made the files an operator's hook or stdio MCP server runs from a writable root protected
(``sh scripts/fmt.sh``). The directory hashed with them (a script may load what lies beside it)
was compared within the session only: ``node scripts/fmt.js`` doing ``require('./lib')`` (node
resolves it, shellrt's resolver reads shell and Python only) had ``scripts/lib.js`` rewritten,
this session skipped the hook, and the next hashed the rewrite as it found it and its first hook
ran it on the host. The same with a new file the script loads when present. Now every file below
a hook's or server's script directory is protected (a command's change reverted; the file tools ask).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests._calls import session_results

_FMT = "try { require('./local.js'); } catch (e) {}\nrequire('./lib.js');\n"


def _session(
    ws: Path, own: Path, session: Path, calls: list[tuple[str, dict[str, Any]]], mode: str = "bypassPermissions"
) -> list[dict[str, Any]]:
    return session_results(ws, "local", calls, mode=mode, settings_files=[own], session_dir=session)


def _setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    if shutil.which("node") is None:
        pytest.fail("node is needed (the hook script is a node script)")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    ws = tmp_path / "ws"
    (ws / "scripts").mkdir(parents=True)
    (ws / "scripts" / "fmt.js").write_text(_FMT)
    (ws / "scripts" / "lib.js").write_text("module.exports = 1;\n")
    own = tmp_path / "operator.json"  # the operator's own file: obeyed, never trust-checked
    hook = {"matcher": "Bash", "hooks": [{"type": "command", "command": "node scripts/fmt.js"}]}
    own.write_text(json.dumps({"hooks": {"PostToolUse": [hook]}}))
    return ws, own


@pytest.mark.parametrize("name", ["lib.js", "local.js"])
def test_what_a_hook_script_loads_beside_it_is_not_run_by_the_next_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    ws, own = _setup(tmp_path, monkeypatch)
    marker = tmp_path / "ran-on-the-host"
    evil = f"require('fs').writeFileSync({str(marker)!r}, 'x');"
    # python3: the analysis cannot see its write (any command the model may run unasked here).
    rewrite = f"python3 - <<'EOF' && echo wrote\nopen('scripts/{name}', 'w').write({evil!r})\nEOF"
    first = _session(ws, own, tmp_path / "s1", [("Bash", {"command": rewrite})])
    assert not first[0]["is_error"] and "wrote" in first[0]["content"], first
    assert not marker.exists()  # this session's hook saw its directory change (round 10)
    second = _session(ws, own, tmp_path / "s2", [("Bash", {"command": "echo next"})])
    assert "next" in json.dumps(second), second
    assert not marker.exists(), "the next session's hook loaded the command's file on the host"
    assert (ws / "scripts" / "lib.js").read_text() == "module.exports = 1;\n"
    assert not (ws / "scripts" / "local.js").exists()


def test_the_file_tools_ask_before_writing_beside_a_hook_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, own = _setup(tmp_path, monkeypatch)
    (ws / "src").mkdir()
    calls: list[tuple[str, dict[str, Any]]] = [
        ("Write", {"file_path": str(ws / "scripts" / "local.js"), "content": "x\n"}),
        ("Write", {"file_path": str(ws / "src" / "app.js"), "content": "x\n"}),
    ]
    results = _session(ws, own, tmp_path / "s", calls, mode="acceptEdits")
    assert results[0]["is_error"] and "hook" in json.dumps(results[0]), results[0]
    assert not (ws / "scripts" / "local.js").exists()
    assert not results[1]["is_error"], results[1]  # elsewhere the files stay the model's


def test_a_stdio_server_scripts_directory_is_protected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same for a stdio MCP server of the operator's settings (``node tools/srv.js``): its next
    start would load the command's ``tools/helper.js``. (It exits at once: what matters is the file.)"""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    ws = tmp_path / "ws"
    (ws / "tools").mkdir(parents=True)
    (ws / "tools" / "srv.js").write_text("require('./helper.js');\n")
    (ws / "tools" / "helper.js").write_text("process.exit(0);\n")
    own = tmp_path / "operator.json"
    server = {"command": "node", "args": ["tools/srv.js"], "cwd": str(ws)}
    own.write_text(json.dumps({"mcpServers": {"tools": server}}))
    rewrite = "python3 - <<'EOF' && echo wrote\nopen('tools/helper.js', 'w').write('1')\nEOF"
    first = _session(ws, own, tmp_path / "s1", [("Bash", {"command": rewrite})])
    assert not first[0]["is_error"] and "wrote" in first[0]["content"], first
    assert (ws / "tools" / "helper.js").read_text() == "process.exit(0);\n", first
