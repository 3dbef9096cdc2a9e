"""Shared set-up of the round 13 host-side session directory tests (a base in /var/tmp, one Bash call)."""

from __future__ import annotations

import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import shellrt
from tests._governance import trust_env
from tests._unix_sockets import outside_dir
from tests.conftest import require


def host_base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, prefix: str) -> Iterator[Path]:
    """A 0755 directory in /var/tmp (no pytest tmp dir: its parents are 0700), bwrap required,
    trust isolated; removed after. A generator for a fixture."""
    require(shutil.which("bwrap") is not None, "bwrap is needed")
    trust_env(tmp_path, monkeypatch)
    yield from outside_dir(prefix)


def host_ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, prefix: str) -> Iterator[Path]:
    """`host_base` with an empty ``ws`` in it, which it yields. A generator for a fixture."""
    for base in host_base(tmp_path, monkeypatch, prefix):
        (base / "ws").mkdir()
        yield base / "ws"


def bypass_runtime(ws: Path, tmp_path: Path) -> shellrt.Runtime:
    """A bwrap Runtime on ``ws`` that asks nothing (session directory ``tmp_path/s``)."""
    return shellrt.Runtime(ws, "bwrap", session_dir=tmp_path / "s", mode="bypassPermissions")


async def tool_result(rt: shellrt.Runtime, name: str, tool_input: dict[str, Any]) -> tuple[str, bool]:
    """One ``name`` call in ``rt``: its result's text, and whether it is an error."""
    block = {"type": "tool_use", "id": "rt13-" + secrets.token_hex(6), "name": name, "input": tool_input}
    result: dict[str, Any] = (await rt.run([block]))["content"][0]
    content = result["content"]
    text = content if isinstance(content, str) else "\n".join(b.get("text", "") for b in content)
    return text, bool(result.get("is_error"))


async def bash_text(rt: shellrt.Runtime, command: str) -> str:
    """One Bash call in ``rt``; its result's text."""
    return (await tool_result(rt, "Bash", {"command": command}))[0]
