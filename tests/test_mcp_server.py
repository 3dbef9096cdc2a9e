"""`shellrt serve` as a real subprocess, driven by the official MCP client over stdio (and HTTP)."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp.types as mt
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests._mcp_support import (
    ROOT,
    fixture_server_config,
    isolated_env,
    processes_with,
    serve_session,
    text_of,
    wait_until,
    write_settings,
)

pytestmark = pytest.mark.anyio


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "hello.txt").write_text("hello from the workspace\n")
    return workspace


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    return h


def _by_name(tools: list[mt.Tool]) -> dict[str, mt.Tool]:
    return {t.name: t for t in tools}


async def test_lists_tools_with_truthful_annotations(ws: Path, home: Path) -> None:
    async with serve_session(ws, home) as session:
        tools = _by_name((await session.list_tools()).tools)
    for name in ("Bash", "TaskOutput", "TaskStop", "Read", "Edit", "Write", "Glob", "Grep"):
        assert name in tools, f"{name} missing from {sorted(tools)}"
    bash = tools["Bash"]
    assert "command" in bash.input_schema["properties"]
    assert bash.description and len(bash.description) > 40
    assert bash.annotations is not None
    # Bash depends on the command: never claimed read-only, possibly destructive, possibly open-world.
    assert bash.annotations.read_only_hint is False
    assert bash.annotations.destructive_hint is True
    assert bash.annotations.open_world_hint is True
    read = tools["Read"].annotations
    assert read is not None and read.read_only_hint is True
    for writer in ("Write", "Edit"):
        ann = tools[writer].annotations
        assert ann is not None and ann.read_only_hint is False
    assert tools["Grep"].annotations is not None and tools["Grep"].annotations.read_only_hint is True
    if "WebFetch" in tools:
        web = tools["WebFetch"].annotations
        assert web is not None and web.open_world_hint is True


async def test_runs_an_allowed_command_and_reads_a_file(ws: Path, home: Path) -> None:
    async with serve_session(ws, home, "--allow", "Bash(echo:*)") as session:
        result = await session.call_tool("Bash", {"command": "echo hello-mcp"})
        assert result.is_error is False, text_of(result)
        assert "hello-mcp" in text_of(result)
        read = await session.call_tool("Read", {"file_path": str(ws / "hello.txt")})
        assert read.is_error is False and "hello from the workspace" in text_of(read)


async def test_background_command_then_task_output(ws: Path, home: Path) -> None:
    async with serve_session(ws, home, "--mode", "bypassPermissions") as session:
        started = await session.call_tool(
            "Bash", {"command": "echo bg-first; sleep 0.3; echo bg-done", "run_in_background": True}
        )
        assert started.is_error is False, text_of(started)
        match = re.search(r"\b(b[a-z0-9]+|[a-z0-9]{6,})\b", text_of(started))
        task_ids = re.findall(r"task[ _-]?id[^A-Za-z0-9]*([A-Za-z0-9_-]+)", text_of(started), re.I)
        task_id = task_ids[0] if task_ids else (match.group(1) if match else "")
        assert task_id, text_of(started)
        output = await session.call_tool("TaskOutput", {"task_id": task_id, "wait_ms": 10_000})
        assert output.is_error is False, text_of(output)
        assert "bg-first" in text_of(output) and "bg-done" in text_of(output)


async def test_denied_calls_are_error_results_with_the_reason(ws: Path, home: Path) -> None:
    (ws / "keep").write_text("x")
    async with serve_session(ws, home, "--mode", "bypassPermissions", "--deny", "Bash(rm:*)") as session:
        result = await session.call_tool("Bash", {"command": "rm -f keep"})
        assert result.is_error is True
        assert "rm" in text_of(result) and re.search(r"den(y|ied)", text_of(result), re.I)
        bad = await session.call_tool("Bash", {"nope": 1})
        assert bad.is_error is True and "command" in text_of(bad)
        unknown = await session.call_tool("NoSuchTool", {})
        assert unknown.is_error is True and "Unknown tool" in text_of(unknown)
    assert (ws / "keep").exists()


async def test_asks_fail_closed_without_elicitation(ws: Path, home: Path) -> None:
    async with serve_session(ws, home) as session:
        result = await session.call_tool("Bash", {"command": "touch made-it"})
    assert result.is_error is True
    assert "elicitation" in text_of(result) or "approve" in text_of(result)
    assert not (ws / "made-it").exists()


async def test_asks_go_to_the_user_through_elicitation(ws: Path, home: Path) -> None:
    seen: list[str] = []
    answers = iter(["allow once", "deny"])

    async def elicit(context: Any, params: Any) -> mt.ElicitResult:
        seen.append(params.message)
        return mt.ElicitResult(action="accept", content={"decision": next(answers), "message": "not today"})

    async with serve_session(ws, home, elicitation_callback=elicit) as session:
        allowed = await session.call_tool("Bash", {"command": "touch approved"})
        denied = await session.call_tool("Bash", {"command": "touch refused"})
    assert allowed.is_error is False, text_of(allowed)
    assert (ws / "approved").exists()
    assert denied.is_error is True and "not today" in text_of(denied)
    assert not (ws / "refused").exists()
    assert len(seen) == 2 and "touch approved" in seen[0]


async def test_progress_notifications_for_a_long_command(ws: Path, home: Path) -> None:
    updates: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append((progress, message))

    async with serve_session(ws, home, "--mode", "bypassPermissions") as session:
        result = await session.call_tool(
            "Bash",
            {"command": "for i in 1 2 3; do echo tick$i; sleep 0.6; done"},
            progress_callback=on_progress,
        )
    assert result.is_error is False, text_of(result)
    assert len(updates) >= 2, updates
    assert [p for p, _ in updates] == sorted(p for p, _ in updates)


async def test_cancellation_kills_the_process_tree(ws: Path, home: Path) -> None:
    marker = "1000.31337"  # `sleep 1000.31337` is unique on this machine
    async with serve_session(ws, home, "--mode", "bypassPermissions") as session:
        async with anyio.create_task_group() as tg:
            tg.start_soon(
                session.call_tool, "Bash", {"command": f"sleep {marker} & sleep {marker}; echo never"}
            )
            assert await wait_until(lambda: len(processes_with(marker)) >= 2, timeout=15), (
                "command never started"
            )
            tg.cancel_scope.cancel()  # the SDK sends notifications/cancelled
        assert await wait_until(lambda: not processes_with(marker), timeout=10), processes_with(marker)
        # The server is still healthy after the cancellation.
        after = await session.call_tool("Bash", {"command": "echo still-here"})
        assert "still-here" in text_of(after)
    assert not processes_with(marker)


@pytest.mark.serial  # no _mcp_test_server.py may run anywhere afterwards
async def test_proxied_mcp_server_through_serve(ws: Path, home: Path) -> None:
    """A server proxied through a server: the test MCP server, configured in settings, reached via serve."""
    write_settings(ws, {"t": fixture_server_config()})
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, mt.ToolListChangedNotification):
            changed.set()

    async with serve_session(
        ws, home, "--allow", "mcp__t", "--deny", "mcp__t__fail", message_handler=on_message
    ) as session:
        names = {t.name for t in (await session.list_tools()).tools}
        assert "mcp__t__echo" not in names, "MCP tools are deferred until discovered"
        early = await session.call_tool("mcp__t__echo", {"text": "x"})
        assert early.is_error is True and "ToolSearch" in text_of(early)

        found = await session.call_tool(
            "ToolSearch",
            {"query": "select:mcp__t__echo,mcp__t__crash,mcp__t__pid,mcp__t__fail,mcp__t__image"},
        )
        assert found.is_error is False, text_of(found)
        with anyio.fail_after(5):
            await changed.wait()
        tools = _by_name((await session.list_tools()).tools)
        assert "mcp__t__echo" in tools and "mcp__t__fail" not in tools  # denied outright: hidden

        echo = await session.call_tool("mcp__t__echo", {"text": "through two servers"})
        assert echo.is_error is False and "echo: through two servers" in text_of(echo)
        image = await session.call_tool("mcp__t__image", {})
        assert any(isinstance(b, mt.ImageContent) for b in image.content)
        denied = await session.call_tool("mcp__t__fail", {})
        assert denied.is_error is True and "mcp__t__fail" in text_of(denied)

        pid_before = text_of(await session.call_tool("mcp__t__pid", {})).strip()
        crashed = await session.call_tool("mcp__t__crash", {})
        assert crashed.is_error is True and "closed the connection" in text_of(crashed)
        pid_after = await session.call_tool("mcp__t__pid", {})
        assert pid_after.is_error is False, text_of(pid_after)
        assert text_of(pid_after).strip() != pid_before
    assert not processes_with(str(ROOT / "tests" / "_mcp_test_server.py"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_streamable_http_transport(ws: Path, home: Path) -> None:
    port = _free_port()
    token = "transport-test-token-0123456789"
    env = {**isolated_env(home), "PATH": "/usr/bin:/bin", "SHELLRT_SERVE_TOKEN": token}
    cmd = [sys.executable, "-m", "shellrt", "serve", "--http", f"127.0.0.1:{port}", "--workspace", str(ws)]
    cmd += ["--sandbox", "local", "--allow", "Bash(echo:*)"]
    async with await anyio.open_process(cmd, env=env, cwd=str(ROOT)) as proc:
        try:
            url = f"http://127.0.0.1:{port}/mcp"
            await _wait_for_port(port)
            async with (
                create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http,
                streamable_http_client(url, http_client=http) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                names = {t.name for t in (await session.list_tools()).tools}
                assert "Bash" in names
                result = await session.call_tool("Bash", {"command": "echo over-http"})
                assert "over-http" in text_of(result)
        finally:
            proc.terminate()
            with anyio.fail_after(15):
                await proc.wait()


async def _wait_for_port(port: int, proc: subprocess.Popen[bytes] | None = None) -> None:
    """Until the server listens on ``port``. 60 s: a busy shared machine took over 20 s to start
    one (the bound only ends a hang); a server ``proc`` that exits ends the wait at once."""
    with anyio.fail_after(60):
        while True:
            try:
                stream = await anyio.connect_tcp("127.0.0.1", port)
                await stream.aclose()
                return
            except OSError:
                if proc is not None and proc.poll() is not None:
                    raise AssertionError(f"the server exited ({proc.returncode}) unlistening") from None
                await anyio.sleep(0.1)


def test_http_refuses_non_loopback_without_allow_remote(tmp_path: Path) -> None:
    from shellrt.cli import main
    from shellrt.cli.serve import parse_listen

    assert parse_listen("127.0.0.1:8765", allow_remote=False) == ("127.0.0.1", 8765)
    assert parse_listen("[::1]:9", allow_remote=False) == ("::1", 9)
    assert parse_listen("localhost:80", allow_remote=False) == ("localhost", 80)
    assert parse_listen("0.0.0.0:80", allow_remote=True) == ("0.0.0.0", 80)
    for bad in ("0.0.0.0:80", "example.com:80", "nope", "127.0.0.1:0", "127.0.0.1:99999"):
        with pytest.raises(ValueError):
            parse_listen(bad, allow_remote=False)
    assert main(["serve", "--http", "0.0.0.0:8765", "--workspace", str(tmp_path)]) == 2
    assert (
        main(["serve", "--http", "0.0.0.0:8765", "--allow-remote", "--no-auth", "--workspace", str(tmp_path)])
        == 2
    )
    assert main(["serve", "--no-auth", "--workspace", str(tmp_path)]) == 2
