"""The clean base environment every command starts from.

Nothing of the runtime's own environment leaks into a command except the few
variables listed here: API keys, tokens and cloud credentials sitting in the
agent's environment must not be readable by the commands it runs.

Base variables (documented contract):

=================  ===========================================================
``PATH``           the host's PATH (local/bwrap see the host's tools) or a
                   standard system PATH when the host has none
``HOME``           the host's HOME (read-only under bwrap)
``USER``/``LOGNAME`` the host user's name, when known
``LANG``           ``C.UTF-8`` (predictable, UTF-8 output)
``TERM``           ``dumb`` (no colour/escape sequences from well-behaved tools)
``PAGER``          ``cat``; ``GIT_PAGER`` ``cat`` (a pager would wait forever)
``GIT_TERMINAL_PROMPT`` ``0`` (no credential prompt on a stdin nobody feeds)
``TMPDIR``         ``/tmp``
``SHELLRT``        ``1``, so scripts can tell they run under shellrt
=================  ===========================================================

On top come, in order: the hardening variables the command analysis asks for
(e.g. git config overrides), then the caller's explicit ``env``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

__all__ = ["DEFAULT_PATH", "base_env", "command_env"]

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def base_env(host_env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The documented base environment, taking only PATH/HOME/USER from ``host_env``."""
    host = os.environ if host_env is None else host_env
    env = {
        "PATH": host.get("PATH") or DEFAULT_PATH,
        "HOME": host.get("HOME") or "/root",
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "PAGER": "cat",
        "GIT_PAGER": "cat",
        "GIT_TERMINAL_PROMPT": "0",
        "TMPDIR": "/tmp",
        "SHELLRT": "1",
    }
    for name in ("USER", "LOGNAME"):
        if host.get(name):
            env[name] = host[name]
    return env


def command_env(base: Mapping[str, str], *layers: Mapping[str, str] | None) -> dict[str, str]:
    """``base`` overlaid with each non-empty layer in order (later wins)."""
    env = dict(base)
    for layer in layers:
        if layer:
            env.update(layer)
    return env
