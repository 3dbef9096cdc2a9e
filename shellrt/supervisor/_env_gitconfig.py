"""The operator's git config files that the environment, not the home directory, names.

Why: every later ``git`` on the host obeys ``$XDG_CONFIG_HOME/git/config`` and
``$GIT_CONFIG_GLOBAL`` (``core.fsmonitor``, ``core.pager``, aliases with ``!``: programs it runs
in every repository). The after-command check knew them only as ``~/.config/git/config`` and
``~/.gitconfig``; with ``XDG_CONFIG_HOME`` inside a writable root (a dotfiles repository as the
workspace, its ``config/`` the operator's XDG directory) a command planted one unseen (red team
round 18). The files are guarded as git config (only code-running keys count).
"""

from __future__ import annotations

import functools
import os

__all__ = ["env_gitconfigs"]


def env_gitconfigs() -> frozenset[str]:
    """The env-named user git configs, spelled as the check's walk spells paths (the directory
    resolved, the name kept) and as given."""
    env = os.environ.get
    return _named(env("XDG_CONFIG_HOME") or "", env("GIT_CONFIG_GLOBAL") or "") | _linked(env("HOME") or "")


@functools.lru_cache(maxsize=8)
def _named(xdg: str, global_file: str) -> frozenset[str]:
    found: set[str] = set()
    for path in (os.path.join(xdg, "git", "config") if os.path.isabs(xdg) else "", global_file):
        if not path or not os.path.isabs(path):  # git ignores a relative XDG_CONFIG_HOME
            continue
        found.add(os.path.normpath(path))
        found.add(os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path)))
    return frozenset(found)


def _linked(home: str) -> frozenset[str]:
    """Where ``~/.gitconfig`` and ``~/.config/git/config`` lead when a link takes them elsewhere (a
    dotfiles repository: ``~/.gitconfig -> ~/dotfiles/gitconfig``; red team round 31). Not cached:
    a link can change between sessions."""
    if not os.path.isabs(home):
        return frozenset()
    found = set()
    for path in (os.path.join(home, ".gitconfig"), os.path.join(home, ".config", "git", "config")):
        real = os.path.realpath(path)
        if real != path:
            found.add(real)
    return frozenset(found)
