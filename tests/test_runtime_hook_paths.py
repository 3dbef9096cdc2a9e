"""PreToolUse hooks see resolved absolute paths: a guard on ``/abs/ws/a.txt`` is not evaded by another spelling."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from shellrt.runtime import Runtime

pytestmark = pytest.mark.anyio

_fresh = iter(range(1, 1_000_000))


def _use(name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    use_id = f"hp-{os.getpid()}-{time.monotonic_ns()}-{next(_fresh)}"
    return {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": use_id, "name": name, "input": tool_input}],
    }


def _text(block: dict[str, Any]) -> str:
    content = block["content"]
    return content if isinstance(content, str) else "\n".join(b.get("text", "") for b in content)


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))
    workspace = tmp_path / "ws"
    (workspace / "sub").mkdir(parents=True)
    (workspace / ".shellrt").mkdir()
    (workspace / "a.txt").write_text("guarded\n")
    (workspace / "b.txt").write_text("free\n")
    (workspace / "link.txt").symlink_to(workspace / "a.txt")
    guarded = str((workspace / "a.txt").resolve())
    seen = tmp_path / "seen.jsonl"
    hook = tmp_path / "guard.py"
    hook.write_text(
        "import json, sys\n"
        "data = json.load(sys.stdin)\n"
        f"open({str(seen)!r}, 'a').write(json.dumps(data['tool_input']) + '\\n')\n"
        "inp = data['tool_input']\n"
        f"if inp.get('file_path') == {guarded!r} or inp.get('path') == {guarded!r}:\n"
        "    print('a.txt is guarded', file=sys.stderr)\n"
        "    sys.exit(2)\n"
    )
    spec = {
        "matcher": "Read|Edit|Write|Grep|Glob",
        "hooks": [{"type": "command", "command": f"{sys.executable} {hook}"}],
    }
    settings = {"hooks": {"PreToolUse": [spec]}, "permissions": {"allow": ["Read", "Grep", "Glob"]}}
    (workspace / ".shellrt" / "settings.json").write_text(json.dumps(settings))
    return workspace


def _seen(ws: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (ws.parent / "seen.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("spelling", ["a.txt", "./sub/../a.txt", "link.txt", "~/ws/a.txt", "sub/../link.txt"])
async def test_a_hook_guarding_an_absolute_path_catches_every_spelling(ws: Path, spelling: str) -> None:
    async with Runtime(ws, "local", session_dir=ws.parent / "session", trust_workspace=True) as rt:
        block = (await rt.run(_use("Read", {"file_path": spelling})))["content"][0]
        assert block["is_error"] and "a.txt is guarded" in _text(block), block
        assert _seen(ws)[-1]["file_path"] == str((ws / "a.txt").resolve())
        # The model's input stays what it wrote: the transcript records it as given.
        entry = json.loads(rt.transcript_path.read_text().splitlines()[-1])
        assert entry["input"] == {"file_path": spelling}


async def test_other_files_pass_and_grep_paths_are_resolved_too(ws: Path) -> None:
    async with Runtime(ws, "local", session_dir=ws.parent / "session", trust_workspace=True) as rt:
        block = (await rt.run(_use("Read", {"file_path": "sub/../b.txt"})))["content"][0]
        assert not block["is_error"] and "free" in _text(block)
        assert _seen(ws)[-1]["file_path"] == str((ws / "b.txt").resolve())
        grep = (await rt.run(_use("Grep", {"pattern": "guarded", "path": "./link.txt"})))["content"][0]
        assert grep["is_error"] and "a.txt is guarded" in _text(grep)
        glob = (await rt.run(_use("Glob", {"pattern": "*.txt", "path": "sub/.."})))["content"][0]
        assert not glob["is_error"], glob
        assert _seen(ws)[-1]["path"] == str(ws.resolve())
        # Without a path, nothing is invented: Glob's path stays absent.
        await rt.run(_use("Glob", {"pattern": "*.md"}))
        assert "path" not in _seen(ws)[-1] or _seen(ws)[-1]["path"] is None
