"""Any inherited variable whose value names a place commands write: dropped for host programs.

Why: round 34 removed a list of known start-up variables (`startup_env`) from what host programs
inherit (hooks, host git, host ripgrep). A list of names is never complete: ``LUA_INIT=@./x.lua``,
``DOTNET_STARTUP_HOOKS=<ws>/x.dll``, ``VIRTUAL_ENV=<ws>/.venv`` (``uv run`` starts its Python) and
every tool's own plugin variable passed (red team, round 35). Which variable some program loads is
not ours to know, so the class is judged by value: a variable is removed when any piece of it
(split at blanks, ``:``, ``;``, ``,``, ``=``, ``@``, quotes) looks like a path (has a ``/``, is
``.`` or ``..``, starts with ``~``) and is not an absolute path `host_path` keeps. A relative name
with no ``/`` (``TCLLIBPATH=lib``) cannot be told from a word (``LANG=C.UTF-8``): those are the
known variables of `startup_env`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence

from sandbox._hostpath import inside, others_write, registered_roots
from sandbox._proclinks import PER_PROCESS, through_proc

__all__ = ["NAME_VALUED", "NOT_LOADED", "Roots", "every_root", "names_a_writable_place", "resolved_elsewhere", "safe_path"]

#: Variables no program loads anything from by value: kept whatever they name. ``PWD``/``OLDPWD``
#: are shellrt's own cwd (often the workspace; a shell resets them).
NOT_LOADED: frozenset[str] = frozenset({"PWD", "OLDPWD", "_"})
_PIECES = re.compile(r"[\s:;,=@'\"()]+")
#: ``TZ=Europe/Berlin`` (or ``:Europe/Berlin``) names a file under ``TZDIR`` (itself judged), not one
#: from the cwd; ``TZ=/path``, ``./x`` or ``../x`` is judged as any other value.
_ZONE_NAME = re.compile(r":?[A-Za-z0-9_+-]+(/[A-Za-z0-9_+-]+)*")
#: CI variables whose value is a repository or ref name (``owner/name``, ``refs/heads/main``): no
#: program reads one as a file from the cwd, and a CI hook needs them (``gh`` reads ``GH_REPO``).
#: Kept when `_REF_NAME` has the value; any other shape is judged as a path (review of round 35).
NAME_VALUED: frozenset[str] = frozenset(
    {
        "GITHUB_REPOSITORY",
        "GITHUB_REF",
        "GITHUB_REF_NAME",
        "GITHUB_HEAD_REF",
        "GITHUB_BASE_REF",
        "GITHUB_WORKFLOW_REF",
        "GITHUB_ACTION_REPOSITORY",
        "GITHUB_ACTION_REF",
        "GH_REPO",
        "CI_PROJECT_PATH",
        "CI_PROJECT_NAMESPACE",
        "CI_COMMIT_REF_NAME",
        "CI_COMMIT_BRANCH",
        "CI_COMMIT_TAG",
        "CI_DEFAULT_BRANCH",
        "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME",
        "CI_MERGE_REQUEST_TARGET_BRANCH_NAME",
        "CI_MERGE_REQUEST_PROJECT_PATH",
        "BUILD_SOURCEBRANCH",
        "BUILD_SOURCEBRANCHNAME",
        "BUILD_REPOSITORY_NAME",
        "SYSTEM_PULLREQUEST_SOURCEBRANCH",
        "SYSTEM_PULLREQUEST_TARGETBRANCH",
        "BUILDKITE_BRANCH",
        "BUILDKITE_PULL_REQUEST_BASE_BRANCH",
        "CIRCLE_BRANCH",
        "TRAVIS_REPO_SLUG",
        "TRAVIS_BRANCH",
        "TRAVIS_PULL_REQUEST_BRANCH",
        "BITBUCKET_BRANCH",
        "BITBUCKET_REPO_FULL_NAME",
        "DRONE_REPO",
        "DRONE_BRANCH",
        "DRONE_COMMIT_REF",
        "GIT_BRANCH",
        "BRANCH_NAME",
        "CHANGE_BRANCH",
        "CHANGE_TARGET",
    }
)
#: A ref's shape (git check-ref-format's characters): no blank, no ``:`` ``\`` ``~`` ``^`` ``?`` ``*``
#: ``[``, no empty, ``.`` or ``..`` component, so neither absolute nor climbing.
_REF_NAME = re.compile(r"(?!\.\.?(/|@|$))[^\s/\\:~^?*\[]+(/(?!\.\.?(/|@|$))[^\s/\\:~^?*\[]+)*")


def names_a_writable_place(value: str, roots: Sequence[str], home: str | None, name: str = "") -> bool:
    """Whether ``value`` holds a path-like piece that is not an absolute path outside ``roots``
    (`every_root`'s list; ``~/x`` read under ``home``; no ``home``: unsafe)."""
    if _ZONE_NAME.fullmatch(value) and name == "TZ":
        return False
    if name in NAME_VALUED and _REF_NAME.fullmatch(value):
        return False
    for piece in _PIECES.split(value):
        if piece.startswith("~"):
            if not home or not (piece == "~" or piece.startswith("~/")):
                return True  # ~user (another user's home), or no home to read it under
            piece = home + piece[1:]
        if ("/" in piece or piece in (".", "..")) and not safe_path(piece, roots):
            return True
    return False


class Roots(tuple[str, ...]):
    """The real paths of every writable root for one judgement of an environment, with the paths
    judged so far: one environment names a CA file ten times, and judging one costs a
    ``realpath`` and, as root, a ``stat`` of each directory above it."""

    judged: dict[str, bool]


def every_root(roots: Iterable[os.PathLike[str] | str]) -> Roots:
    """``roots`` (real paths) and every live session's writable roots (`registered_roots`)."""
    out = Roots(dict.fromkeys([*registered_roots(), *(os.path.realpath(os.fspath(r)) for r in roots)]))
    out.judged = {}
    return out


def safe_path(entry: str, roots: Sequence[str]) -> bool:
    """An absolute path outside ``roots`` (real paths: every live session's, see `every_root`) and,
    as root, not writable by others (`host_path`'s rule); ``/dev/null`` always."""
    judged = roots.judged if isinstance(roots, Roots) else {}
    if entry not in judged:
        judged[entry] = _safe(entry, roots)
    return judged[entry]


def resolved_elsewhere(entry: str, roots: Sequence[str]) -> bool:
    """Whether absolute ``entry`` may name another file for the program that reads it than the one
    judged here (review of round 35): through ``/proc`` or ``/dev/fd`` (``/dev/std*``), per process;
    or with a ``..`` after a directory inside ``roots``, which a command can make a link (the
    kernel resolves ``<ws>/tools/../../x`` through it) after the judgement, even between two calls
    of one cached `hook_env`."""
    if PER_PROCESS.fullmatch(os.path.normpath(entry)) or through_proc(entry):
        return True
    parts = entry.split("/")
    for at in (i for i, part in enumerate(parts) if part == ".."):
        prefix = "/".join(parts[:at]) or "/"
        if inside(os.path.normpath(prefix), roots) or inside(os.path.realpath(prefix), roots):
            return True
    return False


def _safe(entry: str, roots: Sequence[str]) -> bool:
    if entry == os.devnull:
        return True
    if not entry.startswith("/") or resolved_elsewhere(entry, roots):
        return False
    if inside(os.path.normpath(entry), roots) or inside(os.path.realpath(entry), roots):
        return False
    return not (os.geteuid() == 0 and others_write(entry))
