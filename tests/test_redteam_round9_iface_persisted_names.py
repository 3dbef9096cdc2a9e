"""Red team round 9 (interfaces): one persisted result overwrote another's file; a long id lost one.

A result over its tool's size limit is written whole to ``<session>/tool-results/<id>.txt`` and
the model (and the transcript) get that path. The name is the sanitised ``tool_use_id``: ids that
sanitise alike (``a/b`` and ``a_b``, chosen by the client) or an id reused with other input (which
runs again) replaced the first call's file, so the path the model and the audit trail hold for it
showed the second call's output; an id of 300 characters made the file name too long, and the
call's result (after the call ran) was an exception instead. Each result now gets a short file
name of its own. A real Runtime.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import anyio
import pytest
from pydantic import BaseModel, ConfigDict

import shellrt
from shellrt.protocol import PermissionResult, Tool, ToolContext, ToolOutput, ToolUseBlock

_ids = itertools.count()


class LoudInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    word: str


class Loud(Tool[LoudInput, str]):
    """Says its word many times: always over its size limit, so always persisted."""

    name = "Loud"
    input_model = LoudInput
    touches_environment = False
    max_result_chars = 1000

    def prompt(self) -> str:
        return "Say a word many times."

    async def check_permissions(self, tool_input: LoudInput, ctx: ToolContext) -> PermissionResult:
        return PermissionResult.allow("harmless")

    async def call(self, tool_input: LoudInput, ctx: ToolContext) -> ToolOutput[str]:
        return ToolOutput((tool_input.word + " ") * 2000)

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


def _persist_both(tmp_path: Path, first: tuple[str, str], second: tuple[str, str]) -> list[Path]:
    async def go() -> list[Path]:
        paths = []
        async with shellrt.Runtime(
            tmp_path / "ws", "local", tools=[Loud()], session_dir=tmp_path / "s"
        ) as rt:
            for use_id, word in (first, second):
                (envelope,) = await rt.run_envelopes(
                    [ToolUseBlock(id=use_id, name="Loud", input={"word": word})]
                )
                assert envelope.persisted_path, envelope
                paths.append(Path(envelope.persisted_path))
        return paths

    return anyio.run(go)


@pytest.mark.parametrize("same", ["sanitised alike", "reused id"])
def test_each_persisted_result_keeps_its_own_file(tmp_path: Path, same: str) -> None:
    n = next(_ids)
    ids = (f"r9p{n}/x", f"r9p{n}_x") if same == "sanitised alike" else (f"r9p{n}", f"r9p{n}")
    first, second = _persist_both(tmp_path, (ids[0], "FIRST"), (ids[1], "SECOND"))
    assert first != second
    assert first.read_text().startswith("FIRST ") and second.read_text().startswith("SECOND ")


def test_a_long_id_still_gets_its_result(tmp_path: Path) -> None:
    n = next(_ids)
    first, second = _persist_both(
        tmp_path, (f"r9p{n}" + "x" * 300, "FIRST"), (f"r9p{n}" + "x" * 299 + "y", "SECOND")
    )
    assert first != second and len(first.name) < 120
    assert first.read_text().startswith("FIRST ") and second.read_text().startswith("SECOND ")
