"""``shellrt sessions ls|show|rm`` over sessions a real Runtime persisted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from shellrt.runtime import Runtime

ROOT = Path(__file__).resolve().parent.parent


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "SHELLRT_HOME": str(home),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    return subprocess.run(
        [sys.executable, "-m", "shellrt", "sessions", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.anyio
async def test_ls_show_rm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "shellrt-home"
    monkeypatch.setenv("SHELLRT_HOME", str(home))
    monkeypatch.setenv("HOME", str(tmp_path))
    ws = tmp_path / "ws"
    ws.mkdir()
    async with Runtime(ws, "local", session_id="sess-a") as rt:
        call = {"type": "tool_use", "id": "g1", "name": "Glob", "input": {"pattern": "*.py"}}
        await rt.run({"role": "assistant", "content": [call]})
    rows = json.loads(cli(home, "ls", "--json").stdout)
    assert [(r["id"], r["calls"]) for r in rows] == [("sess-a", 1)]
    shown = cli(home, "show", "sess-a")
    assert shown.returncode == 0 and "g1 Glob [ok, ran]" in shown.stdout and "*.py" in shown.stdout
    raw = cli(home, "show", "sess-a", "--json").stdout.splitlines()
    assert json.loads(raw[0])["tool_use_id"] == "g1"
    missing = cli(home, "show", "../etc")
    assert missing.returncode == 1 and "no session" in missing.stderr
    assert cli(home, "rm").returncode == 2
    removed = cli(home, "rm", "sess-a")
    assert removed.returncode == 0 and not (home / "sessions" / "sess-a").exists()
    assert "no sessions" in cli(home, "ls").stdout
