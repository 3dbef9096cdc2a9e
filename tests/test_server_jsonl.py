"""The JSONL tool protocol driven as a real subprocess over real pipes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil

from tests._proc_words import shown_words


class JsonlClient:
    """Writes one JSON line, reads one JSON line back."""

    def __init__(self, workspace: Path, *extra: str) -> None:
        env = {**os.environ, "SHELLRT_HOME": str(workspace.parent / "shellrt-home"), "HOME": str(workspace.parent)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "shellrt", "serve", "--jsonl", "--workspace", str(workspace), *extra],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )

    def send_raw(self, line: str) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline()
        assert answer, f"server closed its output; stderr: {self.stderr()}"
        value: dict[str, Any] = json.loads(answer)
        return value

    def send(self, value: Any) -> dict[str, Any]:
        return self.send_raw(json.dumps(value))

    def close(self, timeout: float = 60) -> int:  # ends a session: 15 s ran out under a CI lane's load
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(timeout)

    def stderr(self) -> str:
        if self.proc.poll() is None:
            return "(still running)"
        assert self.proc.stderr is not None
        return self.proc.stderr.read().decode(errors="replace")


def bash(id_: str, command: str, **extra: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": id_, "name": "Bash", "input": {"command": command, **extra}}


def text_of(block: dict[str, Any]) -> str:
    content = block["content"]
    return content if isinstance(content, str) else "\n".join(c.get("text", "") for c in content)


def marker_pids(marker: str) -> list[int]:
    pids = []
    for proc in psutil.process_iter():
        try:
            if any(marker in part for part in shown_words(proc.pid)):
                pids.append(proc.pid)
        except psutil.Error:
            continue
    return pids


def test_jsonl_round_trip(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / "sub").mkdir(parents=True)
    client = JsonlClient(workspace, "--sandbox", "local", "--mode", "bypassPermissions")
    marker = f"jsonl-bg-{time.time_ns()}"
    try:
        tools = client.send({"type": "list_tools"})
        assert tools["type"] == "tools"
        names = [t["name"] for t in tools["tools"]]
        assert "Bash" in names and all("input_schema" in t for t in tools["tools"])
        openai = client.send({"type": "list_tools", "format": "openai"})
        assert [t["function"]["name"] for t in openai["tools"]] == names

        bad = client.send_raw('{"role": "assistant", "content": [')
        assert bad["type"] == "error" and "not valid JSON" in bad["error"]

        first = client.send(
            {"role": "assistant", "content": [bash("t1", "echo hi"), bash("t2", "cd sub"), bash("t3", "pwd")]}
        )
        assert first["role"] == "user"
        assert [b["tool_use_id"] for b in first["content"]] == ["t1", "t2", "t3"]
        assert text_of(first["content"][0]).strip() == "hi"
        # t2 and t3 are read-only, so they ran as one parallel batch: t3 saw the cwd from before it
        assert text_of(first["content"][2]).strip() == str(workspace)

        # session state persists across lines: cwd, and a single tool_use block is accepted
        again = client.send(bash("t4", "pwd"))
        assert text_of(again["content"][0]).strip() == str(workspace / "sub")

        unknown = client.send(bash("t5", "x") | {"name": "Bsh"})
        assert unknown["content"][0]["is_error"] and "Did you mean 'Bash'" in text_of(unknown["content"][0])

        not_a_message = client.send({"hello": 1})
        assert not_a_message["type"] == "error"

        bg = client.send(bash("t6", f"sleep 1000 # {marker}", run_in_background=True))
        assert "task id" in text_of(bg["content"][0])
        deadline = time.monotonic() + 10  # the task's shell is up within moments, even under load
        while not marker_pids(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker_pids(marker)
    finally:
        code = client.close()
    assert code == 0, client.stderr()
    assert not marker_pids(marker), "EOF must stop every background process of the session"


def test_jsonl_default_mode_denies_writes_headless(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    client = JsonlClient(workspace, "--sandbox", "local")
    try:
        answer = client.send(
            {"role": "assistant", "content": [bash("r", "ls"), bash("w", "touch made-by-model")]}
        )
        read, write = answer["content"]
        assert not read["is_error"]
        assert write["is_error"] and "touch" not in os.listdir(workspace)
        assert not (workspace / "made-by-model").exists()
    finally:
        assert client.close() == 0
