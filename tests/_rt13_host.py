"""Shared set-up of the round 13 host-side session directory tests (a base in /var/tmp, one Bash call)."""

from __future__ import annotations

import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path

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


async def bash_text(rt: shellrt.Runtime, command: str) -> str:
    """One Bash call in ``rt``; its result's text."""
    block = {"type": "tool_use", "id": "rt13-" + secrets.token_hex(6), "name": "Bash", "input": {"command": command}}
    content = (await rt.run([block]))["content"][0]["content"]
    return content if isinstance(content, str) else "\n".join(b.get("text", "") for b in content)
