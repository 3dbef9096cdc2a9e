"""Red team round 24 (trusted): a command plants what an operator's hook loads from the workspace whole.

The operator's own hook (outside the workspace, never trust-checked) puts the workspace itself on
its interpreter's path (``PYTHONPATH=<ws> python3 …``). Round 23 records the tree for it and
refuses the hook within the session once the tree changed, but never protects it (that would
revert every command's write): a command wrote ``sitecustomize.py`` at the root, and the next
session hashed the plant as it found it and ran the hook with it, on the host.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from tests._calls import session_results


def _session(ws: Path, own: Path, session: Path, command: str) -> list[dict[str, Any]]:
    return session_results(ws, "local", [("Bash", {"command": command})], mode="bypassPermissions",
                           settings_files=[own], session_dir=session)


def test_a_module_a_command_planted_on_a_hooks_path_is_not_run_next_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed 1 of 1 before: the next session's hook imported the planted sitecustomize."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    ws = tmp_path / "ws"
    ws.mkdir()
    marker = tmp_path / "ran-on-the-host"
    hook = f"PYTHONPATH={shlex.quote(str(ws))} {shlex.quote(sys.executable)} -c pass"
    own = tmp_path / "operator.json"  # the operator's own file: always obeyed, never trust-checked
    own.write_text(json.dumps({"hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": hook}]}]}}))
    plant = shlex.join(["python3", "-c", "import sys; open('sitecustomize.py', 'w').write(sys.argv[1])",
                        f"open({str(marker)!r}, 'w')\n"])
    first = _session(ws, own, tmp_path / "s1", f"{plant} && echo wrote")
    assert "wrote" in json.dumps(first), first
    assert not marker.exists(), first  # this session's hook refused already (round 23)
    second = _session(ws, own, tmp_path / "s2", "echo next")
    assert "next" in json.dumps(second), second
    assert not marker.exists(), "the next session's hook loaded a module a command planted in the workspace"
    said = "".join(p.read_text(errors="replace") for p in (tmp_path / "s2").rglob("*") if p.is_file())
    assert "earlier session" in said and "shellrt trust add" in said, said  # the notice says what to do
    assert os.path.exists(ws / "sitecustomize.py")  # not reverted: the workspace stays writable
