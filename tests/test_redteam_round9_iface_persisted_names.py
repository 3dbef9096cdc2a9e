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
from shellrt.protocol import PermissionResult, ResultEnvelope, Tool, ToolContext, ToolOutput, ToolUseBlock

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


def _run_both(tmp_path: Path, first: tuple[str, str], second: tuple[str, str]) -> list[ResultEnvelope]:
    async def go() -> list[ResultEnvelope]:
        envelopes = []
        async with shellrt.Runtime(
            tmp_path / "ws", "local", tools=[Loud()], session_dir=tmp_path / "s"
        ) as rt:
            for use_id, word in (first, second):
                (envelope,) = await rt.run_envelopes(
                    [ToolUseBlock(id=use_id, name="Loud", input={"word": word})]
                )
                envelopes.append(envelope)
        return envelopes

    return anyio.run(go)


def _persist_both(tmp_path: Path, first: tuple[str, str], second: tuple[str, str]) -> list[Path]:
    envelopes = _run_both(tmp_path, first, second)
    assert all(e.persisted_path for e in envelopes), envelopes
    return [Path(str(e.persisted_path)) for e in envelopes]


def test_ids_that_sanitise_alike_keep_their_own_files(tmp_path: Path) -> None:
    n = next(_ids)
    first, second = _persist_both(tmp_path, (f"r9p{n}/x", "FIRST"), (f"r9p{n}_x", "SECOND"))
    assert first != second
    assert first.read_text().startswith("FIRST ") and second.read_text().startswith("SECOND ")


def test_a_reused_id_cannot_replace_the_first_calls_file(tmp_path: Path) -> None:
    """Since round 19 a reused id with other input does not run at all (one id names one call);
    the first call's persisted file keeps its output."""
    n = next(_ids)
    first, second = _run_both(tmp_path, (f"r9p{n}", "FIRST"), (f"r9p{n}", "SECOND"))
    assert first.persisted_path and Path(first.persisted_path).read_text().startswith("FIRST "), first
    assert second.model.is_error and second.persisted_path is None, second
    assert "named another Loud call" in str(second.model.content), second
    assert Path(first.persisted_path).read_text().startswith("FIRST ")


def test_a_long_id_still_gets_its_result(tmp_path: Path) -> None:
    n = next(_ids)
    first, second = _persist_both(
        tmp_path, (f"r9p{n}" + "x" * 300, "FIRST"), (f"r9p{n}" + "x" * 299 + "y", "SECOND")
    )
    assert first != second and len(first.name) < 120
    assert first.read_text().startswith("FIRST ") and second.read_text().startswith("SECOND ")
