"""Where and with what a stdio MCP server starts, so a hostile workspace cannot feed it code.

Why: a stdio server from settings runs on the host, started by shellrt. Without a configured
``cwd`` it inherited shellrt's, usually the repository the agent works on, which the sandboxed
commands write: a Python server run with ``-m``/``-c`` has that directory first on ``sys.path``
(a planted ``json.py`` ran on the host at its first ``import json``), and ``npx``/``node``
resolve packages from it. So such a server now starts in the user's home (``/`` when that is
writable by the sandbox too), and every stdio server gets ``PYTHONSAFEPATH=1`` (the directory is
never put on ``sys.path``) unless its ``env`` sets that variable. A configured ``cwd`` is kept:
the operator chose it. Its ``PATH`` never holds an entry commands write (`host_env`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from shellrt.permissions.host_path import host_env
from shellrt.permissions.server_lines import server_cwd
from shellrt.tools.mcp.config import StdioServerConfig

__all__ = ["SAFE_ENV", "launch_cwd", "launch_env"]

#: Added to every stdio server's environment (its configured ``env`` wins).
#: No bytecode either: __pycache__ written beside a server's modules would change what the
#: restart guard hashed, and the server would not be restarted.
SAFE_ENV = {"PYTHONSAFEPATH": "1", "PYTHONDONTWRITEBYTECODE": "1"}


def launch_cwd(config: StdioServerConfig, writable_roots: Sequence[Path]) -> str:
    """The directory the server starts in: its ``cwd``, else ours when no writable root holds it,
    else the user's home when none does, else ``/`` (`server_cwd`: trust resolves the same)."""
    return server_cwd(config.cwd, writable_roots)


def launch_env(config: StdioServerConfig, writable_roots: Sequence[Path] = ()) -> dict[str, str]:
    """What is added to the SDK's minimal environment for the server. Its ``PATH`` (the one its
    command is looked up on, and its own lookups: ``npx`` running ``node``) has no relative entry
    and none inside a root commands write (round 16: a planted ``npx`` ran at a restart)."""
    env = {**SAFE_ENV, **config.env}
    return host_env({**env, "PATH": env.get("PATH", os.environ.get("PATH", os.defpath))}, also=writable_roots)
