"""Red team, round 10 (file tools): the session directory is not the model's to read back.

The session directory holds the transcript (what hooks and the person saw), the audit log, the
resume state, the quarantine (what was taken out of the workspace) and the full outputs the model
is pointed at. Commands see only its result directories (``tool-results/``, ``shell/``,
``tasks/``: `shellrt.runtime.read_only_binds`); the file tools saw all of it: Read of
``<session>/transcript.jsonl`` was allowed unasked ("inside the allowed directories"), and Grep
and Glob of a workspace holding the session directory listed and searched it. Now the tools' view
masks the session directory except its result directories, wherever it lies (inside the
workspace, outside it, reached through a symlink).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from shellrt.protocol import ToolContext, ToolExecutionError
from shellrt.tools.glob import GlobInput, GlobTool
from shellrt.tools.grep import GrepInput, GrepTool
from shellrt.tools.read import ReadInput, ReadTool

pytestmark = pytest.mark.anyio

_SECRET = "SESSION-PRIVATE-7f3a"


def _session(path: Path) -> Path:
    (path / "tool-results").mkdir(parents=True)
    (path / "shell").mkdir()
    (path / "tasks").mkdir()
    (path / "transcript.jsonl").write_text(f'{{"hook_said": "{_SECRET}"}}\n')
    (path / "audit.jsonl").write_text(f"{_SECRET}\n")
    (path / "quarantine").mkdir()
    (path / "quarantine" / "taken.env").write_text(f"TOKEN={_SECRET}\n")
    (path / "tool-results" / "big.txt").write_text("persisted result line\n")
    return path


@pytest.fixture(params=["inside", "outside"])
def places(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, Path, ToolContext]:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "code.py").write_text("print('hello')\n")
    session = _session(ws / ".shellrt-session" if request.param == "inside" else tmp_path / "session")
    os.symlink(session / "audit.jsonl", ws / "audit-link")
    ctx = ToolContext(session_id="s", session_dir=session, workspace=ws, cwd=str(ws), allowed_roots=(ws,))
    return ws, session, ctx


async def _read(ctx: ToolContext, path: str) -> tuple[str, str]:
    """``(verdict, text)`` of a Read as the runtime drives it (text "" when refused)."""
    tool, tool_input = ReadTool(), ReadInput(file_path=path)
    await tool.validate(tool_input, ctx)
    verdict = await tool.check_permissions(tool_input, ctx)
    if verdict.behavior == "deny":
        return "deny", ""
    try:
        return verdict.behavior, (await tool.call(tool_input, ctx)).data.text
    except ToolExecutionError as exc:
        return verdict.behavior, f"refused: {exc}"


@pytest.mark.parametrize("name", ["transcript.jsonl", "audit.jsonl", "quarantine/taken.env"])
async def test_read_does_not_show_the_sessions_own_records(
    places: tuple[Path, Path, ToolContext], name: str
) -> None:
    _, session, ctx = places
    verdict, text = await _read(ctx, str(session / name))
    assert _SECRET not in text, (verdict, text)
    assert verdict == "deny", verdict


async def test_read_through_a_workspace_symlink_does_not_show_them(
    places: tuple[Path, Path, ToolContext],
) -> None:
    ws, _, ctx = places
    verdict, text = await _read(ctx, str(ws / "audit-link"))
    assert _SECRET not in text, (verdict, text)


async def test_a_persisted_result_stays_readable(places: tuple[Path, Path, ToolContext]) -> None:
    _, session, ctx = places
    verdict, text = await _read(ctx, str(session / "tool-results" / "big.txt"))
    assert verdict == "allow" and "persisted result line" in text, (verdict, text)


async def test_grep_and_glob_do_not_search_the_session_directory(
    places: tuple[Path, Path, ToolContext],
) -> None:
    ws, session, ctx = places
    for where in (str(ws), str(session)):
        grep, grep_input = GrepTool(), GrepInput(pattern=_SECRET, path=where, output_mode="content")
        await grep.validate(grep_input, ctx)
        if (await grep.check_permissions(grep_input, ctx)).behavior != "deny":
            try:
                found = grep.to_model_content((await grep.call(grep_input, ctx)).data)
            except ToolExecutionError:
                found = ""
            assert _SECRET not in found, (where, found)
        glob, glob_input = GlobTool(), GlobInput(pattern="**/*.jsonl", path=where)
        await glob.validate(glob_input, ctx)
        if (await glob.check_permissions(glob_input, ctx)).behavior != "deny":
            try:
                listed = glob.to_model_content((await glob.call(glob_input, ctx)).data)
            except ToolExecutionError:
                listed = ""
            assert "transcript.jsonl" not in listed and "audit.jsonl" not in listed, (where, listed)


async def test_a_runtime_session_hides_its_own_records_from_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runtime lists the session directory among the allowed roots (results are read unasked);
    that entry once made the view show the whole directory, transcript included."""
    import shellrt

    # The default session directory, under a state home of the test's own (not the real ~/.local/state).
    monkeypatch.setenv("SHELLRT_HOME", str(tmp_path / "state"))

    ws = tmp_path / "ws"
    ws.mkdir()
    async with shellrt.Runtime(
        workspace=ws, sandbox="local", mode="bypassPermissions", settings_files=()
    ) as rt:
        first = await rt.run(
            [{"type": "tool_use", "id": "sd-1", "name": "Bash", "input": {"command": "seq 1 40000"}}]
        )
        spool = next(w for w in str(first["content"][0]["content"]).split() if "/shell/" in w).strip(
            "().,`'\""
        )
        transcript = rt.session_dir / "transcript.jsonl"
        assert transcript.exists()
        reads = await rt.run(
            [
                {"type": "tool_use", "id": "sd-2", "name": "Read", "input": {"file_path": str(transcript)}},
                {"type": "tool_use", "id": "sd-3", "name": "Read", "input": {"file_path": spool, "limit": 2}},
            ]
        )
    hidden, shown = reads["content"]
    assert hidden.get("is_error"), hidden
    assert not shown.get("is_error") and "1" in str(shown["content"]), shown
