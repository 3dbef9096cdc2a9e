"""What a settings file makes run on the host: its hook commands and its stdio MCP servers' command lines.

Why: trust covers what the operator reviewed. A trusted file's stdio server starts on the host as
the operator; when its command line names a script of the repository (``python3 tools/srv.py``),
a ``git pull`` that changes only the script kept the settings file trusted while the next
session ran new code unasked (red team round 22). So trust records and checks the files a
server's command line runs exactly as it does a hook's (`shellrt.permissions.hook_files`).

The server's working directory is decided here too (`server_cwd`), so that what trust resolves
and where the MCP client starts the server (`shellrt.tools.mcp._launch`) cannot drift apart.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["host_commands", "server_command_line", "server_cwd", "server_lines"]


def server_cwd(cwd: str | None, writable_roots: Sequence[Path]) -> str:
    """Where a stdio server starts: its configured ``cwd``, else ours when no writable root holds
    it, else the user's home when none does, else ``/`` (round 11: never a directory commands write)."""
    if cwd is not None:
        return os.path.abspath(cwd)
    try:
        here = os.getcwd()
    except OSError:  # ours was removed: nothing to inherit
        here = "/"
    if not _writable(here, writable_roots):
        return here
    home = os.path.expanduser("~")
    if os.path.isabs(home) and os.path.isdir(home) and not _writable(home, writable_roots):
        return home
    return "/"


def server_command_line(
    command: str, args: Sequence[str], cwd: str, env: Mapping[str, str] | None = None
) -> str:
    """The command line as a shell command, relative words made absolute from ``cwd`` (the
    resolution reads relative paths from the workspace root, the server from its own cwd).

    Every argument is read from ``cwd``: a bare one (``python3 srv.py`` with ``"cwd": "tools"``)
    too, since the server, unlike a hook, does not run from the workspace root (round 22: it was
    resolved there, so a script beside the server was not recorded, and a package name such as
    ``uvx mcp-server-git``'s made the root's files part of the record). A bare command is looked
    up on ``PATH``, not in ``cwd``, so it stays as it is; options stay as they are.

    ``env`` (trust's view, round 23): the line is prefixed with ``PWD=<cwd>`` and the server's
    ``env`` as assignments, each path-like part of a value made absolute from ``cwd``, so that
    `hook_files` records what the process loads by them (``PYTHONPATH=src``,
    ``NODE_OPTIONS=--require ./x.js``) and, for a cwd in the workspace, what it finds there by
    search (``npx``, ``uv run``).
    """
    words = [_absolute(command, cwd)]
    for word in args:
        bare = "/" not in word and word != "" and not word.startswith("-")
        words.append(os.path.join(cwd, word) if bare else _absolute(word, cwd))
    if env is None:
        return shlex.join(words)
    assignments = [f"PWD={shlex.quote(cwd)}"]
    for name, value in env.items():
        if _NAME.fullmatch(name):
            assignments.append(f"{name}={shlex.quote(_absolute_parts(value, cwd))}")
    return " ".join([*assignments, shlex.join(words)])


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: What separates the paths of one environment value (``a:b``, ``--require ./x.js``, ``--opt=v``).
_PARTS = re.compile(r"([\s:=,;]+)")


def _absolute_parts(value: str, cwd: str) -> str:
    """``value`` with each part that is not an option made absolute from ``cwd``: the process
    reads a relative entry (``PYTHONPATH=src``, ``RUBYLIB=rb``) from its own cwd."""
    out = []
    for part in _PARTS.split(value):
        if part and not _PARTS.fullmatch(part) and not part.startswith("-"):
            part = os.path.normpath(os.path.join(cwd, part))
        out.append(part)
    return "".join(out)


def _absolute(word: str, cwd: str) -> str:
    return word if "/" not in word or os.path.isabs(word) else os.path.join(cwd, word)


def server_lines(servers: Mapping[str, Any], writable_roots: Sequence[Path]) -> list[str]:
    """The command line of each enabled stdio server of ``servers`` (raw ``mcpServers``); an entry
    that is not one (a URL, a malformed one, which is never started) has none."""
    out = []
    for raw in servers.values():
        if not isinstance(raw, Mapping) or raw.get("enabled", True) is False:
            continue
        command, args, cwd = raw.get("command"), raw.get("args", []), raw.get("cwd")
        if not isinstance(command, str) or not command or raw.get("url") is not None:
            continue
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            continue
        env = raw.get("env", {})
        if not isinstance(env, Mapping) or not all(isinstance(v, str) for v in env.values()):
            env = {}  # malformed: never started (`parse_servers`)
        at = server_cwd(cwd if isinstance(cwd, str) else None, writable_roots)
        out.append(server_command_line(command, args, at, {str(k): v for k, v in env.items()}))
    return out


def host_commands(loaded: Any, workspace: Path) -> list[str]:
    """What a loaded settings file (`FileSettings`) runs on the host: its hooks' commands, then its
    stdio servers' command lines, as trust records and checks them."""
    hooks = [hook.command for hook in getattr(loaded, "hooks", ())]
    return [*hooks, *server_lines(getattr(loaded, "mcp_servers", {}) or {}, [workspace])]


def _writable(path: str, roots: Sequence[Path]) -> bool:
    real = os.path.realpath(path)
    for root in roots:
        base = os.path.realpath(root)
        if real == base or real.startswith(base.rstrip(os.sep) + os.sep):
            return True
    return False
