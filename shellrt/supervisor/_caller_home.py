"""The caller's home as shellrt means it everywhere: rules' ``~/``, the masks, settings, the trust store
and shellrt's own state.

Why one definition in this low layer: ``Path.home()`` raised on ``HOME=~``; an empty or relative
``HOME`` anchored ``~/`` rules at ``/`` or below the current directory while the sandbox masked the
password database's home, and put shellrt's in-flight records inside the workspace its command
writes (red team rounds 42 and 43). The permission layer and ``shellrt run``'s lean path (which
loads no ``shellrt.permissions``) both read it from here.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["caller_home", "password_home"]


def password_home() -> Path | None:
    """The caller's home as the password database has it (HOME may point at a scratch dir)."""
    import pwd  # rarely needed: an absolute $HOME answers first

    try:
        found = pwd.getpwuid(os.getuid()).pw_dir
    except (KeyError, OSError):
        return None
    return Path(os.path.normpath(found)) if found.startswith("/") else None


def caller_home() -> Path:
    """``$HOME`` when it is an absolute path, else the password database's home, else ``/``.

    Never raises: a session must start whatever HOME says (unset, empty, relative, ``~``).
    """
    env = os.environ.get("HOME", "")
    if env.startswith("/"):
        return Path(os.path.normpath(env))
    return password_home() or Path("/")
