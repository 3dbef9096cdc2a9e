"""state.json follows the session's state, and a call that changes none of it does not rewrite it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from shellrt.protocol import FileReadRecord
from shellrt.runtime import Runtime

pytestmark = pytest.mark.anyio


def _use(id_: str, name: str, **input_: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "tool_use", "id": id_, "name": name, "input": input_}]}


async def test_state_json_follows_reads_and_cd_and_is_left_alone_otherwise(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "a.txt").write_text("hello\n")
    async with Runtime(ws, "local", session_dir=tmp_path / "s", allow=["Bash", "Read"]) as rt:
        state = rt.session_dir / "state.json"
        before = state.stat().st_ino
        await rt.run(_use("toolu_state_1", "Bash", command="true"))
        assert state.stat().st_ino == before  # nothing changed: not rewritten
        await rt.run(_use("toolu_state_2", "Read", file_path="a.txt"))
        saved = json.loads(state.read_text())
        assert list(saved["read_state"]) == [str(ws / "a.txt")]
        # A record replaced by a new one (a later Read) is written, even at the same key.
        key = str(ws / "a.txt")
        rt.context.read_state[key] = FileReadRecord(sha256="0" * 64, mtime_ns=1, size=1)
        await rt.run(_use("toolu_state_3", "Bash", command="true"))
        assert json.loads(state.read_text())["read_state"][key]["sha256"] == "0" * 64
        await rt.run(_use("toolu_state_4", "Bash", command="cd sub"))
        assert json.loads(state.read_text())["cwd"] == str(ws / "sub")
        inode = state.stat().st_ino
        await rt.run(_use("toolu_state_5", "Bash", command="true"))
        assert state.stat().st_ino == inode
        state.unlink()  # removed behind the session's back: written again at the next call
        await rt.run(_use("toolu_state_6", "Bash", command="true"))
        assert json.loads(state.read_text())["cwd"] == str(ws / "sub")
