"""Red team round 8 (interfaces): a recorded result answering a different call; session ids as paths.

A resent tool_use (same id, name and input) is answered from its recorded result, never run again.
"Same input" was Python equality, for which ``1 == 1.0 == True``: a resend whose input differed in
a value's JSON type (``true`` for ``1``; an MCP server or a tool given ``Any`` tells them apart) got
the earlier call's result and did not run. Inputs are now compared as canonical JSON.

A caller-chosen ``session_id`` was joined to the session root as given: ``../x`` (or an absolute
path) put the session's transcript and state anywhere the caller can write, e.g. a service keying
sessions by a conversation id its client sends. Session ids are now one path component of letters,
digits, ``.``, ``_`` and ``-``.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

import shellrt
from shellrt.protocol import PermissionResult, Tool, ToolContext, ToolOutput, ToolUseBlock

pytestmark = pytest.mark.anyio

_ids = itertools.count()


class ShowInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    value: Any = None


class Show(Tool[ShowInput, str]):
    """Says what it was given, JSON type included (as an MCP server would see it)."""

    name = "Show"
    input_model = ShowInput
    touches_environment = False

    def prompt(self) -> str:
        return "Show the value."

    async def check_permissions(self, tool_input: ShowInput, ctx: ToolContext) -> PermissionResult:
        return PermissionResult.allow("harmless")

    async def call(self, tool_input: ShowInput, ctx: ToolContext) -> ToolOutput[str]:
        return ToolOutput(f"{type(tool_input.value).__name__}:{tool_input.value!r}")

    def to_model_content(self, output: str) -> str:
        return output


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "home").mkdir()
    (tmp_path / "ws").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SHELLRT_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("SHELLRT_MANAGED_SETTINGS", str(tmp_path / "managed.json"))
    monkeypatch.setenv("SHELLRT_TRUST_STORE", str(tmp_path / "trust" / "store.json"))


async def _show(rt: shellrt.Runtime, use_id: str, value: Any) -> str:
    (envelope,) = await rt.run_envelopes([ToolUseBlock(id=use_id, name="Show", input={"value": value})])
    return envelope.model.text()


@pytest.mark.parametrize(
    ("first", "second"), [(1, True), (True, 1), (1, 1.0), (0, False), ({"n": 1}, {"n": True}), ([1], [1.0])]
)
async def test_a_resend_whose_values_differ_in_json_type_is_not_answered_from_the_record(
    tmp_path: Path, first: Any, second: Any
) -> None:
    async with shellrt.Runtime(tmp_path / "ws", "local", tools=[Show()], session_dir=tmp_path / "s") as rt:
        use_id = f"r8r{next(_ids)}"
        assert await _show(rt, use_id, first) == f"{type(first).__name__}:{first!r}"
        # Not answered from the first call's record; since round 19 another call under a used id
        # is refused (one id names one call), where it ran before.
        again = await _show(rt, use_id, second)
        assert again != f"{type(first).__name__}:{first!r}" and "named another Show call" in again, again


async def test_held_an_identical_resend_is_replayed_across_a_reopen(tmp_path: Path) -> None:
    use_id = f"r8r{next(_ids)}"
    async with shellrt.Runtime(tmp_path / "ws", "local", tools=[Show()], session_id="replay-a") as rt:
        assert await _show(rt, use_id, {"k": [1, "x"]}) == "dict:{'k': [1, 'x']}"
    async with shellrt.Runtime(tmp_path / "ws", "local", tools=[Show()], session_id="replay-a") as rt:
        (envelope,) = await rt.run_envelopes(
            [ToolUseBlock(id=use_id, name="Show", input={"value": {"k": [1, "x"]}})]
        )
    assert envelope.model.text() == "dict:{'k': [1, 'x']}"


@pytest.mark.parametrize(
    "session_id", ["../escape", "a/b", "/tmp/abs", "..", ".", "", "x\x00y", "a\nb", "é" * 2]
)
def test_a_session_id_that_is_not_one_plain_name_is_refused(tmp_path: Path, session_id: str) -> None:
    with pytest.raises(ValueError, match="session id"):
        shellrt.Runtime(tmp_path / "ws", "local", session_id=session_id)
    assert not (tmp_path / "state" / "escape").exists()


def test_held_plain_session_ids_are_accepted(tmp_path: Path) -> None:
    for session_id in ("sess-a", "2026.12.02_run-1", "a" * 128):
        rt = shellrt.Runtime(tmp_path / "ws", "local", session_id=session_id)
        assert rt.session_dir == tmp_path / "state" / "sessions" / session_id
