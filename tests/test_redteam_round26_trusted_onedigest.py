"""Red team round 26 (trusted): one whole-workspace digest per session start, shared by every record.

Round 25 made the workspace-tree record (`TreeGuard`) hash once per session, but round 23's
per-hook and per-server records still hashed the tree themselves: a session with one hook and one
stdio server that load the workspace whole hashed it 9 times before its first command (the hook's
session record, its writable-root records twice, the server's baseline and roots, the protected
run files, the guard), and twice before each run of the hook. Now the records of a session's start
share one digest (`shellrt.permissions.start_digests`), taken before its first command; every
check (before a hook runs, before a server starts, at the end) hashes afresh.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

import shellrt.permissions.hook_files as hook_files
from shellrt.runtime import Runtime
from tests._governance import isolated_workspace
from tests.test_redteam_round25_trusted_guard import _settings


def _within(function: str) -> bool:
    """Whether ``function`` is on the caller's stack (the check before a server's launch)."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == function:
            return True
        frame = frame.f_back  # type: ignore[assignment]
    return False


class _Hashes:
    """Every whole-workspace hash (``_hash_tree`` of the workspace, ``.git`` left out), by phase."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, ws: Path) -> None:
        self.phase = "start"
        self.seen: list[str] = []
        real, top = hook_files._hash_tree, os.path.realpath(ws)

        def counted(at: Path, h: Any, skip: str | None = None) -> bool:
            if str(at) == top and skip == ".git":
                self.seen.append("launch" if _within("why_not_restart") else self.phase)
            return real(at, h, skip)

        monkeypatch.setattr(hook_files, "_hash_tree", counted)


def test_a_session_start_hashes_the_workspace_once_for_all_its_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed 1 of 1 before: 8 hashes for the records of the start (and the check before the
    server's launch), 2 per hook run."""
    ws = isolated_workspace(tmp_path, monkeypatch)
    (ws / "app.py").write_text("X = 1\n")
    own = _settings(tmp_path, ws)
    hashes = _Hashes(monkeypatch, ws)

    async def main() -> list[Any]:
        rt = Runtime(ws, "local", mode="bypassPermissions", settings_files=[own], session_dir=tmp_path / "s1")
        async with rt:
            hashes.phase = "run"
            block = {"type": "tool_use", "id": "c0", "name": "mcp__srv__echo", "input": {"text": "hi"}}
            bash = {"type": "tool_use", "id": "c1", "name": "Bash", "input": {"command": "echo ran"}}
            out = (await rt.run({"role": "assistant", "content": [block, bash]}))["content"]
            hashes.phase = "end"
        return list(out)

    out = anyio.run(main)
    assert "hi" in json.dumps(out[0]) and "ran" in json.dumps(out[1]), out  # nothing refused
    assert "not run" not in json.dumps(out), out  # the PostToolUse hook ran
    counts = {p: hashes.seen.count(p) for p in ("start", "launch", "run", "end")}
    assert counts == {"start": 1, "launch": 1, "run": 1, "end": 1}, (
        f"whole-workspace hashes per phase: {counts} (one for every record of the start, one for the "
        "check before the server's launch, one for the checks before a hook run, one at the end expected)"
    )


def test_the_shared_start_digest_never_vouches_for_a_later_plant(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Held: the start's digest ends with the start. A command of this session plants a module;
    the whole-workspace hook's check before its run hashes afresh and does not run it, and the
    next session's server is refused."""
    ws = isolated_workspace(tmp_path, monkeypatch)
    (ws / "app.py").write_text("X = 1\n")
    own = _settings(tmp_path, ws)
    marker = tmp_path / "ran-on-the-host"

    async def session(name: str, calls: list[tuple[str, dict[str, Any]]]) -> tuple[list[Any], list[str]]:
        async with Runtime(ws, "local", mode="bypassPermissions", settings_files=[own], session_dir=tmp_path / name) as rt:
            out: list[Any] = []
            for i, (tool, value) in enumerate(calls):
                block = {"type": "tool_use", "id": f"c{i}", "name": tool, "input": value}
                out += (await rt.run({"role": "assistant", "content": [block]}))["content"]
            return out, list(rt.mcp_diagnostics)

    plant = f"printf '%s\\n' \"open('{marker}', 'w')\" > sitecustomize.py && echo wrote"
    first, _ = anyio.run(session, "s1", [("Bash", {"command": plant})])
    assert "wrote" in json.dumps(first), first
    assert not marker.exists(), "the hook ran on a tree the start's digest vouched for"
    said = "".join(p.read_text(errors="replace") for p in (tmp_path / "s1").rglob("*") if p.is_file())
    assert "hook not run" in said, said
    second, said = anyio.run(session, "s2", [("mcp__srv__echo", {"text": "hi"})])
    assert second[0].get("is_error") and "shellrt trust add" in " ".join(said), (second, said)
    assert not marker.exists(), "a module a command planted ran on the host"
