"""A relative ``session_dir`` is taken from the working directory at construction, once.

Before, the path stayed relative: Grep's hit judging compared it with absolute
paths and raised a ValueError out of ``Runtime.run`` instead of returning a result,
and a later ``chdir`` of the caller moved the session's files.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import shellrt
from shellrt.protocol import ToolUseBlock

pytestmark = pytest.mark.anyio


async def test_grep_works_with_a_relative_session_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SHELLRT_MANAGED_SETTINGS", str(tmp_path / "managed.json"))
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("needle here\n")
    monkeypatch.chdir(tmp_path)
    async with shellrt.Runtime(
        workspace=ws, sandbox="local", session_dir="rel-session", settings_files=()
    ) as rt:
        assert rt.session_dir == tmp_path / "rel-session"
        os.chdir(ws)  # the caller moves on; the session's files stay where they were made
        envelopes = await rt.run_envelopes(
            [
                ToolUseBlock(
                    id="rel-grep-1", name="Grep", input={"pattern": "needle", "output_mode": "content"}
                )
            ]
        )
    text = envelopes[0].model.content
    text = text if isinstance(text, str) else "\n".join(getattr(b, "text", "") for b in text)
    assert not envelopes[0].is_error, text
    assert "needle here" in text
    assert (tmp_path / "rel-session").is_dir() and not (ws / "rel-session").exists()
