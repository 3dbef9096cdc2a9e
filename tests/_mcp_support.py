"""Helpers for the MCP tests: spawn ``shellrt serve`` with the official client, find leftover processes."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import psutil
from mcp import ClientSession, StdioServerParameters, stdio_client

from tests._proc_words import shown_words

ROOT = Path(__file__).resolve().parent.parent
TEST_SERVER = Path(__file__).resolve().parent / "_mcp_test_server.py"


def isolated_env(home: Path) -> dict[str, str]:
    """Environment for a child shellrt: its own HOME (no user settings) and session root."""
    env = {
        "HOME": str(home),
        "SHELLRT_HOME": str(home / ".shellrt-home"),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH", "")])),
    }
    return env


def write_settings(workspace: Path, servers: dict[str, Any], **extra: Any) -> Path:
    """``<workspace>/.shellrt/settings.json`` with ``mcpServers``."""
    path = workspace / ".shellrt" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mcpServers": servers, **extra}))
    return path


def fixture_server_config(**extra: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(TEST_SERVER)], **extra}


@asynccontextmanager
async def serve_session(
    workspace: Path, home: Path, *args: str, **session_kwargs: Any
) -> AsyncIterator[ClientSession]:
    """``python -m shellrt serve --workspace W --sandbox local ARGS`` driven by the SDK's stdio client."""
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m", "shellrt", "serve", "--workspace", str(workspace), "--sandbox", "local", "--trust-workspace", *args
        ],
        env=isolated_env(home),
        cwd=str(ROOT),
    )
    with open(home / "serve.stderr.log", "a") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write, **session_kwargs) as session,
        ):
            with anyio.fail_after(30):
                await session.initialize()
            yield session


def processes_with(marker: str) -> list[psutil.Process]:
    """Live processes whose command line contains ``marker``."""
    found = []
    for proc in psutil.process_iter(["status"]):
        try:
            if proc.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            if marker in " ".join(shown_words(proc.pid)):
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


async def wait_until(predicate: Any, timeout: float = 10.0, interval: float = 0.05) -> bool:
    with anyio.move_on_after(timeout):
        while not predicate():
            await anyio.sleep(interval)
        return True
    return False


def text_of(result: Any) -> str:
    return "\n".join(getattr(block, "text", f"[{block.type}]") for block in result.content)
