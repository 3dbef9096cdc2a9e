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

import logging
import os
import threading
import time
from collections.abc import Iterable, Mapping

from shellrt.permissions.env_values import (
    NOT_LOADED,
    Roots,
    every_root,
    names_a_writable_place,
    resolved_elsewhere,
)
from shellrt.permissions.git_env_config import is_git_env_config, unsafe_git_env_config
from shellrt.permissions.host_path import host_env, host_path
from shellrt.permissions.startup_env import names_writable

__all__ = ["CACHE_S", "SEARCH_PATH_VARIABLES", "hook_env"]

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
#: Cleaned entry by entry above: what is left is kept.
_CLEANED = frozenset({"PATH", *SEARCH_PATH_VARIABLES})
#: Seconds a result is reused. Besides the environment and the live roots (its key) it depends on
#: the file system (symlinks, and as root owners and modes of the directories named): a change
#: there is seen within this time, as `sandbox._liveroots` sees a dead process's roots.
CACHE_S = 2.0
_CACHE_ENTRIES = 32
_lock = threading.Lock()  # git queries ask from worker threads
_cache: dict[tuple[object, ...], tuple[float, dict[str, str]]] = {}
#: Names already reported as removed (`_report_removed`): once per process, not once per call.
_reported: set[str] = set()
log = logging.getLogger("shellrt.hooks")


def hook_env(environ: Mapping[str, str], roots: Iterable[os.PathLike[str] | str]) -> dict[str, str]:
    """``environ`` for a host-side program: ``PATH`` and every `SEARCH_PATH_VARIABLES` entry without
    relative or empty entries and without entries inside ``roots`` (or another live session's), and
    without the variables that name such a place (`startup_env`, round 34; any variable, round 35).

    Cached for `CACHE_S` per environment and set of live roots: it resolves every path of the
    environment (3.7 ms at integ, more since round 35 judges every variable), and host ripgrep,
    its walker and every git query of a call each ask (round 35)."""
    named = every_root(roots)
    key = (tuple(environ.items()), tuple(named), os.geteuid())
    now = time.monotonic()
    with _lock:
        hit = _cache.get(key)
    if hit is not None and now - hit[0] < CACHE_S:
        return dict(hit[1])
    env = _cleaned(environ, named)
    _report_removed([name for name in environ if name not in env])
    with _lock:
        if len(_cache) >= _CACHE_ENTRIES:
            _cache.clear()
        _cache[key] = (now, env)
    return dict(env)


def _report_removed(names: list[str]) -> None:
    """Tell the operator, once per name, which inherited variables host programs no longer get:
    a hook missing one otherwise fails with nothing saying why (review of round 35). Names only:
    values hold tokens."""
    with _lock:
        new = [name for name in names if name not in _reported]
        _reported.update(new)
    if new:
        log.warning(
            "hooks, host git and host search do not inherit %s: the value names a place sandboxed commands "
            "can write, a relative path, or a path resolved per process; a hook that needs one can set it "
            "in the hook's own command (NAME=/absolute/path command), outside every workspace",
            ", ".join(sorted(new)),
        )


def _cleaned(environ: Mapping[str, str], named: Roots) -> dict[str, str]:
    """`hook_env`'s result, computed (``named``: `every_root`'s list)."""
    env = host_env(environ, also=named)
    env["PATH"] = _as_judged(env["PATH"], named)
    for name in SEARCH_PATH_VARIABLES:
        if name not in env:
            continue
        kept = _as_judged(host_path(env[name], named), named)
        if kept:
            env[name] = kept
        else:
            del env[name]
    home = env.get("HOME")
    if home is not None and names_writable("HOME", home, named):
        home = None  # HOME in the workspace: ~/.gitconfig, ~/.bashrc are a command's (round 35)
    for name in [name for name, value in env.items() if _dropped(name, value, named, home)]:
        del env[name]  # BASH_ENV=.bashenv, NODE_OPTIONS=--require ./x.js, LD_PRELOAD… (round 34)
    if any(is_git_env_config(name) for name in env) and unsafe_git_env_config(env, named, home):
        for name in [name for name in env if is_git_env_config(name)]:
            del env[name]  # GIT_CONFIG_PARAMETERS="'core.fsmonitor'='<ws>/x'" (round 35)
    return env


def _as_judged(kept: str, roots: Roots) -> str:
    """`host_path`'s result without the entries a hook may resolve to another directory
    (`resolved_elsewhere`: ``/proc/self/cwd/bin``, ``<ws>/tools/../../bin``; review of round 35)."""
    entries = kept.split(os.pathsep)
    return os.pathsep.join(entry for entry in entries if entry and not resolved_elsewhere(entry, roots))


def _dropped(name: str, value: str, roots: Roots, home: str | None) -> bool:
    """A known start-up variable naming a writable place (`startup_env`), or any other variable
    whose value has a path-like piece that is not a kept absolute path (`env_values`, round 35)."""
    if name in _CLEANED or name in NOT_LOADED:
        return False
    return names_writable(name, value, roots, home) or names_a_writable_place(value, roots, home, name)
