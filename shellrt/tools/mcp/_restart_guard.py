"""The files a stdio MCP server's command line runs where commands write, so a restart cannot run a plant.

Why: a server from the operator's settings runs on the host. When its command line names a file
in the workspace (``python3 tools/srv.py``), or in any other root the sandbox writes, a command
can rewrite that file and then make the server crash or time out through one of its own tools:
the next call restarts the server, which would run the rewritten file unsandboxed. The files are
resolved and hashed as hook commands are (`shellrt.permissions.hook_files`: the script, what it
loads by a fixed path, its directory whole; `shellrt.permissions.writable_files` for every
writable root) when the server first starts, and a restart is refused when they changed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shellrt.permissions.hook_files import HookFiles, compare_hook_files, hook_files
from shellrt.permissions.server_lines import server_command_line
from shellrt.permissions.start_digests import StartDigests
from shellrt.permissions.writable_files import RootsFiles, root_file_paths, roots_changed, roots_files
from shellrt.tools.mcp._launch import launch_cwd
from shellrt.tools.mcp.config import StdioServerConfig, parse_servers

__all__ = ["ServerFiles", "server_files", "server_run_files", "why_not_restart"]


@dataclass(frozen=True)
class ServerFiles:
    """What the server's command line ran from the workspace and from every writable root."""

    workspace: HookFiles
    roots: RootsFiles


def _command_line(config: StdioServerConfig, cwd: str) -> str:
    """The command line as a shell command, with its cwd and ``env`` (`server_command_line`: as
    trust records it), so what ``PYTHONPATH=src`` loads is protected too (round 23)."""
    return server_command_line(config.command, config.args, cwd, config.env)


def server_files(workspace: Path, config: StdioServerConfig, cwd: str, roots: Sequence[Path]) -> ServerFiles:
    """What ``config``'s command line (started in ``cwd``) runs from ``workspace`` and ``roots``, hashed now."""
    line = _command_line(config, cwd)
    return ServerFiles(
        hook_files(workspace, [line]), roots_files([workspace, *roots], [line], base=Path(cwd))
    )


def server_run_files(raw: Mapping[str, Any] | None, workspace: Path, roots: Sequence[Path]) -> list[Path]:
    """The files the stdio servers of ``raw`` (``mcpServers``) run from a writable root.

    Why: the restart check compares them with the server's first start only, so a command's
    rewrite was started by the next session's first launch, on the host (red team round 17);
    the runtime makes them protected files (a command's change is reverted)."""
    servers, _ = parse_servers(raw)
    found: dict[str, None] = {}
    for config in servers.values():
        if isinstance(config, StdioServerConfig):
            cwd = launch_cwd(config, roots)
            line = _command_line(config, cwd)
            found.update(dict.fromkeys(root_file_paths(roots_files([workspace, *roots], [line], base=Path(cwd)))))
    return [Path(p) for p in found]


def why_not_restart(workspace: Path, config: StdioServerConfig, cwd: str, first: ServerFiles) -> str | None:
    """Why the server must not be started again (None: its files are as they were)."""
    line = _command_line(config, cwd)
    with StartDigests().recording():  # a check: hashed now, one whole-tree hash for both (round 26)
        why = compare_hook_files(first.workspace, hook_files(workspace, [line]))
        if why is None:
            why = roots_changed(first.roots, [line], base=Path(cwd))
            if why is None:
                return None
    why = (
        why.removeprefix("hook ")
        .replace("since the workspace was trusted", "since the server first started")
        .replace("since the session started", "since the server first started")
    )
    why = why.replace("when the workspace was trusted", "when the server first started")
    return (
        f"{why}; the server runs on the host, outside the sandbox, and a command may have written it, "
        "so it is not restarted: review the file, then start a new session"
    )
