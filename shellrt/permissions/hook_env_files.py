"""Environment files a hook's program reads itself: their lines are the hook's environment.

Why (red team round 53): ``node --env-file=.env .claude/hooks/g.js`` takes ``NODE_OPTIONS`` from
the workspace's ``.env`` before the hook's first line (node 20.6 and later): a command wrote
``NODE_OPTIONS=--require ./lib/pre.js`` there, or rewrote the ``lib/pre.js`` a trusted ``.env``
already named, and the operator's hook ran it on the host. The record held the hook's script
alone (an option's value without a ``/`` was read as no path). A hook line's assignments were
read as paths since round 23; an environment file's lines now are too (`env_file_lines`), the
file itself recorded. A script that loads one at run time (``process.loadEnvFile()``, Python's
``dotenv``) gives every child it starts an environment no record reads: the caller records the
tree (`loads_env_at_run_time`, by a pattern: over-reads).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from shellrt.permissions.hook_read import read_regular

__all__ = ["ENV_FILE_PROGRAMS", "env_file_lines", "env_file_operands", "loads_env_at_run_time"]

#: Programs that read an environment file named by an option, and those options.
ENV_FILE_PROGRAMS: dict[str, tuple[str, ...]] = {
    "node": ("--env-file", "--env-file-if-exists"),
    "nodejs": ("--env-file", "--env-file-if-exists"),
    "bun": ("--env-file",),
    "deno": ("--env-file", "--env"),
}
#: An environment file larger than this is not read (its lines count as unreadable).
_MAX_ENV_FILE = 1 << 20
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
#: What loads an environment file at run time: node's ``process.loadEnvFile``/``util.parseEnv``,
#: the ``dotenv`` packages of node and Python, an ``--env-file`` option in a line a script starts.
_RUNTIME_LOADERS = re.compile(rb"loadEnvFile|parseEnv|dotenv|env-file")


def env_file_operands(program: str, values: Sequence[str | None]) -> list[str | None]:
    """The environment files ``program values`` reads by its options (None: a word chosen at run
    time); ``values`` are the words after the program. Options only: after the script the rest is
    the script's."""
    options = ENV_FILE_PROGRAMS.get(program)
    if options is None:
        return []
    out: list[str | None] = []
    for index, value in enumerate(values):
        if value is None:
            if index > 0 and values[index - 1] in options:
                out.append(None)
            continue
        if value in options:
            if index + 1 >= len(values):
                continue
            out.append(values[index + 1])
        elif value.startswith(tuple(option + "=" for option in options)):
            out.append(value.split("=", 1)[1])
        elif value.startswith(options):
            out.append(None)  # another spelling of the option (``--env-file-if-exists``'s prefix)
    return out


def env_file_lines(path: str) -> list[tuple[str, str]] | None:
    """``(name, value)`` of each assignment of the environment file ``path`` ([] when absent),
    or None when a line cannot be read by the plain rules every reader shares (a quote, an escape,
    a ``$`` or a line continuing over several): then what it sets is not known."""
    data = read_regular(path, _MAX_ENV_FILE + 1)
    if data is None:
        return []
    if len(data) > _MAX_ENV_FILE:
        return None
    out: list[tuple[str, str]] = []
    for raw in data.decode("utf-8", "surrogateescape").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export ") :].lstrip()
        name, eq, value = line.partition("=")
        name, value = name.strip(), value.strip()
        if not eq or not _NAME.fullmatch(name):
            return None
        if value[:1] in ("'", '"', "`"):
            quote = value[0]
            if len(value) < 2 or not value.endswith(quote) or quote in value[1:-1] or "\\" in value:
                return None
            value = value[1:-1]
        else:
            value = value.split(" #", 1)[0].strip()
            if any(c in value for c in "'\"`\\"):
                return None
        if "$" in value:
            return None  # expanded by some readers (dotenv-expand, bun), not by others
        out.append((name, value))
    return out


def loads_env_at_run_time(path: str) -> bool:
    """Whether the script ``path`` may load an environment file while it runs (by a pattern; a
    script larger than the read counts: what lies past it is not known)."""
    data = read_regular(path, _MAX_ENV_FILE + 1)
    return data is not None and (len(data) > _MAX_ENV_FILE or _RUNTIME_LOADERS.search(data) is not None)
