"""The environment a hook runs with: shellrt's own, less every search path a command can write.

Why: hooks run on the host, as the operator, from the workspace root, with shellrt's inherited
environment. Round 16 took ``PATH``'s relative entries and those inside the session's writable
roots out; the other search-path variables kept theirs. ``export PYTHONPATH=$PYTHONPATH:/opt/x``
with ``PYTHONPATH`` unset leaves ``:/opt/x``, whose empty entry is the working directory (Python
puts it first on ``sys.path`` even with ``PYTHONSAFEPATH``; ``ld.so`` searches it for every library
of ``LD_LIBRARY_PATH``): a sandboxed command wrote ``json.py`` at the workspace root, and the
operator's own Python guard hook, outside the workspace, imported it on the host (red team round
33). Each of these variables now gets ``PATH``'s treatment (`sandbox._hostpath.host_path`); one
left with no entry is removed. Start-up variables naming such a place (``BASH_ENV=.bashenv``,
``LD_PRELOAD``, ``NODE_OPTIONS=--require ./x.js``) are removed whole (`startup_env`, round 34).
Every host program of the permissions area gets this environment: hooks, the hook launcher's
``unshare`` probe, the ``git --list-cmds`` query.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from shellrt.permissions.host_path import host_env, host_path
from shellrt.permissions.startup_env import names_writable

__all__ = ["SEARCH_PATH_VARIABLES", "hook_env"]

#: Colon-separated lists of directories a hook's programs load code from by search.
SEARCH_PATH_VARIABLES: tuple[str, ...] = (
    "PYTHONPATH",
    "LD_LIBRARY_PATH",
    "GCONV_PATH",
    "NODE_PATH",
    "PERL5LIB",
    "PERLLIB",
    "RUBYLIB",
    "GEM_PATH",
    "CLASSPATH",
)


def hook_env(environ: Mapping[str, str], roots: Iterable[os.PathLike[str] | str]) -> dict[str, str]:
    """``environ`` for a host-side program: ``PATH`` and every `SEARCH_PATH_VARIABLES` entry without
    relative or empty entries and without entries inside ``roots`` (or another live session's), and
    without the start-up variables that name such a place (`startup_env`, round 34)."""
    roots = list(roots)
    env = host_env(environ, also=roots)
    for name in SEARCH_PATH_VARIABLES:
        if name not in env:
            continue
        kept = host_path(env[name], roots)
        if kept:
            env[name] = kept
        else:
            del env[name]
    named = [os.fspath(r) for r in roots]
    home = env.get("HOME")
    for name in [name for name, value in env.items() if names_writable(name, value, named, home)]:
        del env[name]  # BASH_ENV=.bashenv, NODE_OPTIONS=--require ./x.js, LD_PRELOAD… (round 34)
    return env
