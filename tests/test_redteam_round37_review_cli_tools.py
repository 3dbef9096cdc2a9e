"""Round 37 red team, review: ``shellrt tools`` lists what it can and names a tool it cannot.

It read every tool's ``prompt()``, semantics and visibility itself, outside the registry's guard
(round 36 runtime2's Left): one registered tool whose own code raised or answered a non-str ended
the command with a traceback and listed nothing. Now that tool is left out and named on stderr,
the others are listed. Real Runtime (the CLI's own, with one tool more), no sandbox.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

import shellrt
import shellrt.cli.tools as cli_tools
from shellrt.protocol import ToolContext
from shellrt.protocol.permission import PermissionResult
from shellrt.protocol.tool import Tool, ToolOutput
from shellrt.tools.bash import Bash
from tests._governance import isolated_workspace


class _In(BaseModel):
    text: str = ""


class Broken(Tool[_In, str]):
    name = "Broken"
    input_model = _In

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.armed = False

    def prompt(self) -> Any:
        if self.armed and self.mode == "prompt_raises":
            raise RuntimeError("prompt broke")
        if self.armed and self.mode == "prompt_not_str":
            return 42
        return "a tool"

    @property  # type: ignore[override]
    def defer_loading(self) -> Any:
        if self.armed and self.mode == "deferral_raises":
            raise KeyError("defer_loading broke")
        return False

    async def check_permissions(self, tool_input: _In, ctx: ToolContext) -> PermissionResult:
        return PermissionResult.allow()

    async def call(self, tool_input: _In, ctx: ToolContext) -> ToolOutput[str]:
        return ToolOutput("ran")

    def to_model_content(self, output: str) -> str:
        return output


@pytest.mark.parametrize("mode", ["prompt_raises", "prompt_not_str", "deferral_raises"])
def test_shellrt_tools_leaves_a_failing_tool_out_and_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], mode: str
) -> None:
    ws = isolated_workspace(tmp_path, monkeypatch)
    broken = Broken(mode)
    broken.armed = True

    def runtime_from_args(_args: argparse.Namespace) -> shellrt.Runtime:
        return shellrt.Runtime(ws, "local", session_dir=tmp_path / "s", tools=[Bash(), broken])

    monkeypatch.setattr(cli_tools, "runtime_from_args", runtime_from_args)
    code = cli_tools.main(argparse.Namespace(json=True))
    out, err = capsys.readouterr()
    assert code == 0, err
    rows = json.loads(out)
    assert [r["name"] for r in rows] == ["Bash"]
    assert "'Broken'" in err and "left out" in err, err
