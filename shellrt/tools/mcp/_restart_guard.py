"""The workspace files a stdio MCP server's command line runs, so a restart cannot run a plant.

Why: a server from the operator's settings runs on the host. When its command line names a file
in the workspace (``python3 tools/srv.py``), a command in the sandbox can rewrite that file and
then make the server crash or time out through one of its own tools: the next call restarts the
server, which would run the rewritten file unsandboxed. The files are resolved and hashed as hook
commands are (`shellrt.permissions.hook_files`: the script, what it loads by a fixed path, its
directory whole) when the server first starts, and a restart is refused when they changed.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from shellrt.permissions.hook_files import HookFiles, compare_hook_files, hook_files
from shellrt.tools.mcp.config import StdioServerConfig

__all__ = ["server_files", "why_not_restart"]


def server_files(workspace: Path, config: StdioServerConfig) -> HookFiles:
    """What ``config``'s command line runs from ``workspace``, hashed now.

    Relative words are taken from the server's working directory (its ``cwd``, else ours), made
    absolute so that the resolution, which reads relative paths from the workspace root, finds
    the same files the server will run."""
    cwd = os.path.abspath(config.cwd or os.getcwd())
    words = [
        word if "/" not in word or os.path.isabs(word) else os.path.join(cwd, word)
        for word in (config.command, *config.args)
    ]
    return hook_files(workspace, [shlex.join(words)])


def why_not_restart(workspace: Path, config: StdioServerConfig, first: HookFiles) -> str | None:
    """Why the server must not be started again (None: its workspace files are as they were)."""
    why = compare_hook_files(first, server_files(workspace, config))
    if why is None:
        return None
    why = why.removeprefix("hook ").replace(
        "since the workspace was trusted", "since the server first started"
    )
    why = why.replace("when the workspace was trusted", "when the server first started")
    return (
        f"{why}; the server runs on the host, outside the sandbox, and a command may have written it, "
        "so it is not restarted: review the file, then start a new session"
    )
