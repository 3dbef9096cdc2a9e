"""A Runtime with a small message budget and Read/``cat`` calls of workspace files: the set-up of the
message-budget rounds (52 runtime4, 53 review52), written once."""

from __future__ import annotations

import itertools
from pathlib import Path

import shellrt
from shellrt.protocol import ToolUseBlock
from shellrt.tools.bash import Bash
from shellrt.tools.read import ReadTool

__all__ = ["budget_runtime", "read_or_cat"]

_ids = itertools.count()


def budget_runtime(ws: Path, budget: int) -> shellrt.Runtime:
    """A local Runtime in bypassPermissions with Bash and Read, whose messages get ``budget`` characters."""
    return shellrt.Runtime(
        ws,
        "local",
        session_dir=ws.parent / "s",
        tools=[Bash(), ReadTool()],
        mode="bypassPermissions",
        message_budget_chars=budget,
    )


def read_or_cat(ws: Path, tool: str, name: str) -> ToolUseBlock:
    """A ``Read`` of ``ws/name`` (``tool`` "Read"), else a Bash ``cat name``, with a fresh id."""
    tag = f"mb{next(_ids)}"
    if tool == "Read":
        return ToolUseBlock(id=tag, name="Read", input={"file_path": str(ws / name)})
    return ToolUseBlock(id=tag, name="Bash", input={"command": f"cat {name}"})
