"""Built-in tools: thin adapters on the Tool protocol (Bash, tasks, files, web, search, todos).

`builtin_tools()` returns fresh instances in the stable order the model sees
them. PowerShell is included only where ``pwsh`` is installed (the tool itself
explains the missing binary when called directly).
"""

from __future__ import annotations

import shutil
from typing import Any

from shellrt.protocol import Tool

__all__ = ["builtin_tools"]


def builtin_tools(*, include_powershell: bool | None = None) -> list[Tool[Any, Any]]:
    """Every built-in tool, in the order they appear in ``tools[]``."""
    from shellrt.tools.bash import Bash
    from shellrt.tools.edit import EditTool
    from shellrt.tools.glob import GlobTool
    from shellrt.tools.grep import GrepTool
    from shellrt.tools.powershell import PowerShell
    from shellrt.tools.read import ReadTool
    from shellrt.tools.task_output import TaskOutput
    from shellrt.tools.task_stop import TaskStop
    from shellrt.tools.todo_write import TodoWriteTool
    from shellrt.tools.tool_search import ToolSearchTool
    from shellrt.tools.web_fetch import WebFetchTool
    from shellrt.tools.write import WriteTool

    tools: list[Tool[Any, Any]] = [Bash(), TaskOutput(), TaskStop()]
    if include_powershell if include_powershell is not None else shutil.which("pwsh") is not None:
        tools.append(PowerShell())
    tools += [
        ReadTool(),
        EditTool(),
        WriteTool(),
        GlobTool(),
        GrepTool(),
        WebFetchTool(),
        TodoWriteTool(),
        ToolSearchTool(),
    ]
    return tools
