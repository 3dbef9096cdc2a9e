"""Crash and resume: a real SIGKILL between two halves of a conversation (issue 23).

The first half runs in a child process that is killed mid-call; the second
half reopens the same session id in this process, restores the conversation
and carries on: the killed call gets a synthetic result and is not run again,
discovered tools, todos, cwd and read state come back, and Edit works without
a new Read only while the file is unchanged.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from shellrt.runtime import Runtime
from shellrt.runtime.messages import MISSING_RESULT
from tests._proc_words import shown_words

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parent.parent
MARKER = "shellrt-resume-test-sleeper"

FIRST_HALF = r"""
import json, sys, anyio
from shellrt.runtime import Runtime

ws, session_dir, out = sys.argv[1], sys.argv[2], sys.argv[3]

def use(id_, name, **input_):
    return {"role": "assistant", "content": [{"type": "tool_use", "id": id_, "name": name, "input": input_}]}

async def main():
    conversation = [{"role": "user", "content": "fix a.txt"}]
    async with Runtime(ws, "local", session_dir=session_dir, session_id="resume-1", allow=["Bash", "Edit"]) as rt:
        todos = [{"content": "Fix a.txt", "status": "in_progress", "activeForm": "Fixing a.txt"}]
        for message in (
            use("t1", "TodoWrite", todos=todos),
            use("b1", "Bash", command="mkdir -p sub && cd sub"),
            use("r1", "Read", file_path="../a.txt"),
        ):
            conversation += [message, await rt.run(message)]
        with open(out, "w") as fh:
            json.dump(conversation, fh)
        print("READY", flush=True)
        await rt.run(use("k1", "Bash", command="sleep 30 # MARKER; echo ran > ../killed.txt"))

anyio.run(main)
""".replace("MARKER", MARKER)


def _leftovers() -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter():
        try:
            if any(MARKER in part for part in shown_words(proc.pid)):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def _text(block: dict[str, Any]) -> str:
    content = block["content"]
    return content if isinstance(content, str) else "\n".join(b.get("text", "") for b in content)


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("old line\n")
    return workspace


def _first_half(ws: Path, session_dir: Path, out: Path) -> None:
    script = ws.parent / "first_half.py"
    script.write_text(FIRST_HALF)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    child = subprocess.Popen(
        [sys.executable, str(script), str(ws), str(session_dir), str(out)],
        stdout=subprocess.PIPE,
        env=env,
        start_new_session=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == b"READY", "the first half did not get to its last call"
        deadline = time.monotonic() + 60
        while not _leftovers() and time.monotonic() < deadline:  # the last call is running
            time.sleep(0.05)
        os.kill(child.pid, signal.SIGKILL)  # the crash: no cleanup, no result for k1
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        for proc in _leftovers():  # the orphaned command of the killed owner
            proc.kill()


async def test_crash_and_resume(ws: Path) -> None:
    session_dir = ws.parent / "session"
    out = ws.parent / "conversation.json"
    _first_half(ws, session_dir, out)
    conversation = json.loads(out.read_text())
    crashed_call = {
        "role": "assistant",
        "content": [
            {
                "type": "tool_use",
                "id": "k1",
                "name": "Bash",
                "input": {"command": f"sleep 30 # {MARKER}; echo ran > ../killed.txt"},
            }
        ],
    }
    conversation.append(crashed_call)

    async with Runtime(
        ws, "local", session_dir=session_dir, session_id="resume-1", allow=["Bash", "Edit"]
    ) as rt:
        # What the conversation cannot carry comes from the persisted state of the same session id.
        assert rt.context.cwd == str(ws / "sub")
        # Resent without a restore: the transcript answers; the call cut short by the crash is not run again.
        early = await rt.run(crashed_call)
        assert early["content"][0]["is_error"] and _text(early["content"][0]) == MISSING_RESULT
        assert not (ws / "killed.txt").exists()
        assert await rt.run(conversation[3]) == conversation[4], "a call that ran is answered from its record"
        restored = rt.restore(conversation)
        assert [(c.kind, c.tool_use_id) for c in restored.changes] == [("synthetic_result", "k1")]
        assert restored.messages[-1]["content"][0]["content"] == MISSING_RESULT
        assert restored.todos == 1 and rt.context.tool_state["TodoWrite"][0].content == "Fix a.txt"
        assert restored.stale_reads == [], "the persisted read state of this session is used"

        resent = await rt.run(crashed_call)
        assert resent["content"][0]["is_error"] and _text(resent["content"][0]) == MISSING_RESULT
        assert not (ws / "killed.txt").exists(), "the killed call is not run again"

        edit = {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "e1",
                    "name": "Edit",
                    "input": {"file_path": "../a.txt", "old_string": "old", "new_string": "new"},
                }
            ],
        }
        done = (await rt.run(edit))["content"][0]
        assert not done["is_error"], done
        assert (ws / "a.txt").read_text() == "new line\n"

    # A different session id has no persisted state: the same conversation's reads are stale.
    (ws / "a.txt").write_text("old line\n")
    async with Runtime(ws, "local", session_dir=session_dir, session_id="other", allow=["Edit"]) as rt:
        assert rt.context.cwd == str(ws)
        restored = rt.restore(conversation)
        # Relative paths resolve against this session's cwd (the conversation does not carry cwd changes);
        # wherever it lands, the read counts as stale.
        assert len(restored.stale_reads) == 1
        refused = (
            await rt.run(
                {
                    **edit,
                    "content": [
                        {
                            **edit["content"][0],
                            "id": "e2",
                            "input": {"file_path": "a.txt", "old_string": "old", "new_string": "new"},
                        }
                    ],
                }
            )
        )["content"][0]
        assert refused["is_error"] and "Read" in _text(refused) and (ws / "a.txt").read_text() == "old line\n"


async def test_sessions_live_in_the_user_state_dir_and_old_ones_are_pruned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from shellrt.runtime.session import SESSION_RETENTION_DAYS

    monkeypatch.delenv("SHELLRT_HOME", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    ws = tmp_path / "ws"
    ws.mkdir()
    root = tmp_path / "state" / "shellrt" / "sessions"
    old, fresh, foreign = root / "old", root / "fresh", root / "not-a-session"
    for d in (old, fresh, foreign):
        d.mkdir(parents=True)
    (old / "state.json").write_text("{}")
    (fresh / "transcript.jsonl").write_text("")
    long_ago = time.time() - (SESSION_RETENTION_DAYS + 1) * 86400
    for d in (old, foreign):
        os.utime(d, (long_ago, long_ago))
    async with Runtime(ws, "local", session_id="s-new") as rt:
        assert rt.session_dir == root / "s-new"
        assert (rt.session_dir.stat().st_mode & 0o777) == 0o700
        await rt.run(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "g", "name": "Glob", "input": {"pattern": "*"}}],
            }
        )
        assert (rt.session_dir / "state.json").stat().st_mode & 0o777 == 0o600
    assert not old.exists() and fresh.exists() and foreign.exists()
    monkeypatch.setenv("XDG_STATE_HOME", "relative/ignored")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    async with Runtime(ws, "local", session_id="s2") as rt:
        assert rt.session_dir == tmp_path / "home" / ".local" / "state" / "shellrt" / "sessions" / "s2"
