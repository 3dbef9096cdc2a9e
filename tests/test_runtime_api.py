"""The Python API end to end: a real Runtime, real sandbox, real Bash processes."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

import shellrt
from shellrt.permissions import ApprovalRequest, ApprovalResponse
from shellrt.protocol import ToolUseBlock
from tests._proc_words import shown_words
from tests._timing import peak_running

pytestmark = pytest.mark.anyio


def bash(id_: str, command: str, **extra: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": id_, "name": "Bash", "input": {"command": command, **extra}}


def texts(user_msg: dict[str, Any]) -> list[str]:
    out = []
    for block in user_msg["content"]:
        content = block["content"]
        out.append(content if isinstance(content, str) else "\n".join(c.get("text", "") for c in content))
    return out


async def test_run_assistant_message_pairs_results_in_order(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    async with shellrt.Runtime(workspace=tmp_path, sandbox="local", session_dir=tmp_path / ".s") as rt:
        message = {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me look."},
                bash("a", "echo hello"),
                bash("b", "cd sub && pwd"),
                # Fails only once its read-only siblings have long finished: a failing Bash call
                # cancels the siblings still running in its parallel batch (by design).
                bash("c", "sleep 1; ls nonexistent-dir-xyz"),
            ],
        }
        user = await rt.run(message)
        assert user["role"] == "user"
        assert [b["tool_use_id"] for b in user["content"]] == ["a", "b", "c"]
        a, b, c = texts(user)
        assert a.strip() == "hello"
        assert str(tmp_path / "sub") in b
        assert "Exit code 2" in c or "No such file" in c
        # the cd was tracked: the next call starts in sub/
        [pwd] = texts(await rt.run(bash("d", "pwd")))
        assert pwd.strip() == str(tmp_path / "sub")


async def test_writes_need_permission_headless_denies(tmp_path: Path) -> None:
    async with shellrt.Runtime(workspace=tmp_path, sandbox="local", session_dir=tmp_path / ".s") as rt:
        user = await rt.run([bash("w", "touch created.txt")])
        block = user["content"][0]
        assert block["is_error"] is True
        assert not (tmp_path / "created.txt").exists()


async def test_approver_callback_allows(tmp_path: Path) -> None:
    asked: list[ApprovalRequest] = []

    async def approve(request: ApprovalRequest) -> ApprovalResponse:
        asked.append(request)
        return ApprovalResponse(behavior="allow")

    async with shellrt.Runtime(
        workspace=tmp_path, sandbox="local", approver=approve, session_dir=tmp_path / ".s"
    ) as rt:
        user = await rt.run([bash("w", "touch created.txt")])
        assert user["content"][0]["is_error"] is False
    assert (tmp_path / "created.txt").exists()
    assert asked and asked[0].tool_name == "Bash" and "touch created.txt" in asked[0].description


async def test_parallel_read_only_bash(tmp_path: Path) -> None:
    async with shellrt.Runtime(workspace=tmp_path, sandbox="local", session_dir=tmp_path / ".s") as rt:
        # How many of the sleeps ran at once, counted in /proc (in turn: 1): a wall-clock total (it
        # was < 9 s of 16 s, which two at a time also met) is what a loaded machine stretches.
        blocks = [bash(f"s{i}", "sleep 2.0491") for i in range(8)]
        user, peak = await peak_running(["sleep", "2.0491"], lambda: rt.run(blocks))
    assert all(not b["is_error"] for b in user["content"])
    assert peak >= 4, f"at most {peak} of 8 read-only 2 s sleeps ran at once"


async def test_tools_for_both_apis(tmp_path: Path) -> None:
    async with shellrt.Runtime(workspace=tmp_path, sandbox="local", session_dir=tmp_path / ".s") as rt:
        anthropic = rt.tools_for_anthropic()
        openai = rt.tools_for_openai()
        names = [t["name"] for t in anthropic]
        assert names[:3] == ["Bash", "TaskOutput", "TaskStop"]
        assert {"Read", "Edit", "Write", "Glob", "Grep", "WebFetch"} <= set(names)
        assert [t["function"]["name"] for t in openai] == names
        assert names == [t["name"] for t in rt.tools_for_anthropic()]  # stable order
        bash_schema = anthropic[0]["input_schema"]
        assert bash_schema["properties"]["timeout"]["maximum"] == 600000


async def test_close_kills_background_tasks(tmp_path: Path) -> None:
    import psutil

    marker = f"shellrt-api-test-{time.time_ns()}"
    async with shellrt.Runtime(
        workspace=tmp_path, sandbox="local", mode="bypassPermissions", session_dir=tmp_path / ".s"
    ) as rt:
        user = await rt.run([bash("bg", f"sleep 1000 # {marker}", run_in_background=True)])
        assert "task id" in texts(user)[0]
        # Found by its shell's text (`tests._proc_words`); waited for, and on failure said what the
        # task's output holds, since CI once found no such process right after the start (stop 46).
        deadline = time.monotonic() + 10
        while not _with_marker(psutil, marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        out = Path(texts(user)[0].rsplit("Output file: ", 1)[-1].strip())
        assert _with_marker(psutil, marker), (texts(user), out.read_bytes()[-2000:] if out.is_file() else None)
    deadline = time.monotonic() + 3
    while _with_marker(psutil, marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _with_marker(psutil, marker)


async def test_streaming_api(tmp_path: Path) -> None:
    async with shellrt.Runtime(workspace=tmp_path, sandbox="local", session_dir=tmp_path / ".s") as rt:
        got = []
        async with rt.streaming() as stream:
            stream.add(ToolUseBlock(id="x", name="Bash", input={"command": "echo one"}))
            stream.add(ToolUseBlock(id="y", name="Bash", input={"command": "echo two"}))
            stream.close()
            async for envelope in stream.results():
                got.append((envelope.tool_use_id, envelope.model.text().strip()))
    assert got == [("x", "one"), ("y", "two")]


def _with_marker(psutil: Any, marker: str) -> list[int]:
    found = []
    for proc in psutil.process_iter():
        try:
            if any(marker in part for part in shown_words(proc.pid)):
                found.append(proc.pid)
        except psutil.Error:
            continue
    return found


async def test_parallel_cd_applied_in_tool_use_order(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    async with shellrt.Runtime(workspace=tmp_path, sandbox="local", session_dir=tmp_path / ".s") as rt:
        # Both are read-only, so they share a batch; the first finishes last.
        first = await rt.run([bash("1", "sleep 0.5; cd a"), bash("2", "cd b")])
        assert all(not b["is_error"] for b in first["content"])
        [pwd] = texts(await rt.run(bash("3", "pwd")))
        assert pwd.strip() == str(tmp_path / "b")
        assert rt.context.cwd == str(tmp_path / "b")
