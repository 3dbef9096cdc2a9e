"""The one home a rule's ``~/`` means: the permission layer's and the sandbox masks' alike.

Why: with ``HOME`` empty, relative or ``~``, the permission layer anchored ``Read(~/tok)`` at ``/``
or below the current directory (``Path.home()`` / ``$HOME`` as given; ``HOME=~`` even raised),
while the sandbox compile masked the password database's home: a rule that denied one file in
governance and masked another (red team round 42). Both now call `caller_home`.
"""

from __future__ import annotations

import os
import pwd
from pathlib import Path

__all__ = ["caller_home", "password_home"]


def password_home() -> Path | None:
    """The caller's home as the password database has it (HOME may point at a scratch dir)."""
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
