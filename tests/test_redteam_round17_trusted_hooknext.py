"""Red team round 17 (trusted): a hook script of the operator's settings, rewritten for the next session.

The operator's own settings (``--settings`` outside the workspace, or ``~/.shellrt/settings.json``)
may run a workspace script as a hook (``sh scripts/fmt.sh`` after every Write, a team's usual
set-up). Round 10 made the hook runner hash such files when the session starts and skip a hook
whose files changed *during* the session. A command's rewrite was kept, though: the next session
hashed the rewritten script as it found it, and its first hook ran it on the host, unsandboxed.
The files a hook runs from a writable root are now protected files (a command's change reverted).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.runtime import Runtime
from tests._calls import session_results


def _session(
    ws: Path, own: Path, session: Path, calls: list[tuple[str, dict[str, Any]]]
) -> list[dict[str, Any]]:
    return session_results(ws, "local", calls, mode="bypassPermissions", settings_files=[own], session_dir=session)


def test_a_rewritten_hook_script_does_not_run_in_the_next_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    ws = tmp_path / "ws"
    (ws / "scripts").mkdir(parents=True)
    (ws / "scripts" / "fmt.sh").write_text("#!/bin/sh\nexit 0\n")
    marker = tmp_path / "ran-on-the-host"
    own = tmp_path / "operator.json"  # the operator's own file: always obeyed, never trust-checked
    hook = {"matcher": "Bash", "hooks": [{"type": "command", "command": "sh scripts/fmt.sh"}]}
    own.write_text(json.dumps({"hooks": {"PostToolUse": [hook]}}))
    # python3: the analysis cannot see its write (any command the model may run unasked here).
    rewrite = (
        f"python3 -c \"open('scripts/fmt.sh', 'w').write('#!/bin/sh\\\\ntouch {marker}\\\\n')\"; echo wrote"
    )
    first = _session(ws, own, tmp_path / "s1", [("Bash", {"command": rewrite})])
    assert "wrote" in json.dumps(first), first
    assert not marker.exists()  # this session's hook saw the change (round 10)
    second = _session(ws, own, tmp_path / "s2", [("Bash", {"command": "echo next"})])
    assert "next" in json.dumps(second), second
    assert not marker.exists(), "the next session ran the rewritten hook script on the host"
    assert (ws / "scripts" / "fmt.sh").read_text() == "#!/bin/sh\nexit 0\n"


def test_the_file_tools_ask_before_writing_what_a_hook_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    ws = tmp_path / "ws"
    (ws / "scripts").mkdir(parents=True)
    (ws / "src").mkdir()
    (ws / "scripts" / "fmt.sh").write_text("#!/bin/sh\nexit 0\n")
    own = tmp_path / "operator.json"
    hook = {"matcher": "Bash", "hooks": [{"type": "command", "command": "sh scripts/fmt.sh"}]}
    own.write_text(json.dumps({"hooks": {"PostToolUse": [hook]}}))

    async def main() -> list[dict[str, Any]]:
        async with Runtime(
            ws, "local", mode="acceptEdits", settings_files=[own], session_dir=tmp_path / "s"
        ) as rt:
            out = []
            for i, name in enumerate(("scripts/fmt.sh", "src/other.sh")):
                path = str(ws / name)
                block = {
                    "type": "tool_use",
                    "id": f"c{i}",
                    "name": "Write",
                    "input": {"file_path": path, "content": "x\n"},
                }
                if name == "scripts/fmt.sh":  # read first, as an overwrite needs
                    read = {"type": "tool_use", "id": "r0", "name": "Read", "input": {"file_path": path}}
                    await rt.run({"role": "assistant", "content": [read]})
                out += (await rt.run({"role": "assistant", "content": [block]}))["content"]
            return out

    results = anyio.run(main)
    assert results[0]["is_error"] and "hook" in json.dumps(results[0]), results[0]
    assert (ws / "scripts" / "fmt.sh").read_text() == "#!/bin/sh\nexit 0\n"
    # Elsewhere the files stay the model's (beside the script they ask too: round 18).
    assert not results[1]["is_error"], results[1]


def test_a_rewritten_mcp_server_script_is_reverted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same for a stdio MCP server of the operator's settings (``python3 tools/srv.py``): the
    restart check compares with the server's first start only; the next session started the
    rewrite. (The server here exits at once: what matters is what the next start would run.)"""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    ws = tmp_path / "ws"
    (ws / "tools").mkdir(parents=True)
    (ws / "tools" / "srv.py").write_text("raise SystemExit(0)\n")
    own = tmp_path / "operator.json"
    server = {"command": "python3", "args": ["tools/srv.py"], "cwd": str(ws)}
    own.write_text(json.dumps({"mcpServers": {"tools": server}}))
    rewrite = "python3 -c \"open('tools/srv.py', 'w').write('import os')\"; echo wrote"
    first = _session(ws, own, tmp_path / "s1", [("Bash", {"command": rewrite})])
    assert "wrote" in json.dumps(first), first
    assert (ws / "tools" / "srv.py").read_text() == "raise SystemExit(0)\n", first
    assert "tools/srv.py" in json.dumps(first), first
