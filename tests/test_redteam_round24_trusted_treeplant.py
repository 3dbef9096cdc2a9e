"""Red team round 24 (trusted): a command plants what an operator's server finds in the workspace.

The operator's own settings (outside the workspace, never trust-checked) start a stdio server
that loads the workspace *whole*: its ``"cwd"`` is the workspace (``python3 -m`` with
``PYTHONSAFEPATH`` cleared, ``npx``, ``uv run`` search there) or its ``env`` names the workspace
itself (``PYTHONPATH=<ws>``). Round 23 records the tree for such a server and compares it before
a *restart*, but never protects it (that would revert every command's write) and never carries
it to the next session: a command wrote ``sitecustomize.py`` at the workspace root and the next
session's server imported it on the host, unsandboxed (round 23 "Left").
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.runtime import Runtime
from tests._governance import record_entries as _entries
from tests._mcp_support import TEST_SERVER

_PATH = os.pathsep.join([str(Path(__file__).resolve().parent.parent), *filter(None, sys.path)])


def _session(ws: Path, own: Path, session: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """The results of ``calls`` in one session, then its MCP diagnostics."""

    async def main() -> list[Any]:
        async with Runtime(ws, "local", mode="bypassPermissions", settings_files=[own], session_dir=session) as rt:
            out: list[Any] = []
            for i, (name, value) in enumerate(calls):
                block = {"type": "tool_use", "id": f"c{i}", "name": name, "input": value}
                out += (await rt.run({"role": "assistant", "content": [block]}))["content"]
            return [*out, rt.mcp_diagnostics]

    return anyio.run(main)


def _server(ws: Path, shape: str) -> dict[str, Any]:
    if shape == "cwd":  # started in the workspace; the interpreter puts its cwd first on sys.path
        return {"command": sys.executable, "args": [str(TEST_SERVER)], "cwd": str(ws), "alwaysLoad": True,
                "env": {"PYTHONPATH": os.pathsep.join([".", _PATH])}}
    # started outside it, the workspace itself on its path
    return {"command": sys.executable, "args": [str(TEST_SERVER)], "alwaysLoad": True,
            "env": {"PYTHONPATH": os.pathsep.join([str(ws), _PATH])}}


@pytest.mark.parametrize("shape", ["cwd", "env"])
def test_a_module_a_command_planted_in_a_server_workspace_is_not_run_next_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: str
) -> None:
    """Failed 2 of 2 before: the second session's server imported the planted sitecustomize."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "app.py").write_text("X = 1\n")
    marker = tmp_path / "ran-on-the-host"
    own = tmp_path / "operator.json"  # the operator's own file: always obeyed, never trust-checked
    own.write_text(json.dumps({"mcpServers": {"srv": _server(ws, shape)}}))
    plant = shlex.join(["python3", "-c", "import sys; open('sitecustomize.py', 'w').write(sys.argv[1])",
                        f"open({str(marker)!r}, 'w')\n"])
    first = _session(ws, own, tmp_path / "s1", [("Bash", {"command": f"{plant} && echo wrote"})])
    assert "wrote" in json.dumps(first), first
    assert (ws / "sitecustomize.py").exists()  # not protected: the workspace stays writable
    second = _session(ws, own, tmp_path / "s2", [("mcp__srv__echo", {"text": "hi"})])
    assert not marker.exists(), "the next session's server loaded a module a command planted in its workspace"
    assert second[0].get("is_error"), second
    said = " ".join(second[-1])  # what the operator is told, and what to do
    assert "srv" in said and "earlier session" in said and "shellrt trust add" in said, second


def test_trust_add_lets_it_start_again_and_an_unchanged_session_keeps_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The way back: after a session that wrote the workspace, the operator reviews it and runs
    ``shellrt trust add`` (`record_trust`); then the server starts, and a session that changes
    nothing leaves it startable."""
    from shellrt.permissions.tree_writes import tree_writes_path
    from shellrt.permissions.trust import record_trust

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    ws = tmp_path / "ws"
    ws.mkdir()
    own = tmp_path / "operator.json"
    own.write_text(json.dumps({"mcpServers": {"srv": _server(ws, "cwd")}}))
    echo = ("mcp__srv__echo", {"text": "hi"})
    first = _session(ws, own, tmp_path / "s1", [("Bash", {"command": "echo note > notes.txt && echo wrote"}), echo])
    assert "wrote" in json.dumps(first) and not first[1].get("is_error"), first  # started before the write
    left = json.loads(tree_writes_path().read_text())[os.path.realpath(ws)]
    assert "earlier session" in left["changed"], left  # the next session refuses it (tests above)
    record_trust(ws)
    again = _session(ws, own, tmp_path / "s3", [echo])
    assert not again[0].get("is_error") and "hi" in json.dumps(again[0]), again
    assert _entries(tree_writes_path()) == {}  # unchanged: the next session may start it


def test_a_session_that_died_leaves_its_record_and_refuses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fails closed: a session that never ended (killed) and a tree changed since are not
    told apart from a command's write; an unreadable record refuses too."""
    from shellrt.permissions.tree_writes import begin_tree_session, end_tree_session, tree_writes_path

    monkeypatch.setenv("SHELLRT_TRUST_STORE", str(tmp_path / "cfg" / "trusted-workspaces.json"))
    ws = tmp_path / "ws"
    ws.mkdir()
    why, at = begin_tree_session(ws)
    assert why is None
    end_tree_session(ws, at)  # unchanged: nothing left
    assert _entries(tree_writes_path()) == {}
    assert begin_tree_session(ws)[0] is None  # this one "dies": never ended
    (ws / "x.py").write_text("import os\n")
    why, _ = begin_tree_session(ws)
    assert why is not None and "earlier session" in why, why
    assert begin_tree_session(ws)[0] == why  # stays refused until `shellrt trust add`
    tree_writes_path().write_text("not json")
    assert "not valid" in str(begin_tree_session(ws)[0])
    monkeypatch.setenv("SHELLRT_TRUST_STORE", str(ws / "cfg" / "trusted-workspaces.json"))
    assert "inside the workspace" in str(begin_tree_session(ws)[0])  # a command could remove it
