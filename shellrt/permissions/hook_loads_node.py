"""What a hook's node script loads from the workspace by a path: its relative requires and imports,
followed from file to file, and the ``package.json`` files that decide how node loads it.

Why (red team round 45): a hook ``node scripts/guard.js`` was recorded with its own directory
(``scripts/``) only; its ``require('../lib/policy.js')`` loaded a file no record held, and a
subpath import (``require('#cfg')``) loaded whatever the root ``package.json``'s ``imports`` named.
A sandboxed command rewrote either, and the operator's hook ran it on the host. Now the directory
of every module a node script reaches by a literal relative path is recorded whole (what it loads
beside it, as for the hook script's own), the modules found are read in turn, and every
``package.json`` from a script's directory up to the root is recorded (its ``type`` and
``imports``), with the directories its ``imports`` targets lie in. A path computed at run time
(``require('./plugins/' + name)``) is not followed (see docs/security.md, round 45 Left).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable
from pathlib import Path

from shellrt.permissions.hook_node_packages import is_node_script, literal_specifiers, read_manifest

__all__ = ["MAX_NODE_MODULES_READ", "node_script_loads", "root_node_scripts", "runs_from_node_modules"]

#: Node modules read for their loads per settings file's hooks, at most (beyond: not followed).
MAX_NODE_MODULES_READ = 256
_SUFFIXES = ("", ".js", ".cjs", ".mjs", ".json", ".node")
_SCRIPT_NAMES = (".js", ".cjs", ".mjs")
#: `hook_files.ROOT_FILES`: the root's own files (a module at the root), not its subdirectories.
_ROOT_FILES = "./"
#: `hook_files.WHOLE_WORKSPACE`: the whole tree (an ``imports`` pattern ``"#x/*": "./*"``).
_WHOLE_WORKSPACE = "."


def node_script_loads(root: Path, rels: Iterable[str]) -> tuple[list[str], list[str]]:
    """Workspace-relative paths (directories and ``package.json`` files, present or not) that the
    node scripts among ``rels`` load by a relative path or through their package scope, and why
    they cannot all be vouched for (more than `MAX_NODE_MODULES_READ` modules to read)."""
    base = str(root)
    out: dict[str, None] = {}
    queue = [rel for rel in rels if not _in_node_modules(rel) and is_node_script(os.path.join(base, rel))]
    read: set[str] = set()
    mains: set[str] = set()
    whole = False  # an ``imports``/``exports`` pattern that may map anywhere in the root
    while queue and len(read) < MAX_NODE_MODULES_READ:
        rel = queue.pop()
        if rel in read:
            continue
        read.add(rel)
        here = os.path.dirname(rel)
        scopes = _scopes(here)
        out.update(dict.fromkeys(scopes))
        scope = _scope(base, scopes)
        for spec in literal_specifiers(os.path.join(base, rel)):
            if spec.startswith("#"):
                targets = scope.targets("imports")
            elif spec.startswith(("./", "../")) or spec in (".", ".."):
                targets = [os.path.normpath(os.path.join(here, spec))]
            elif scope.name and (spec == scope.name or spec.startswith(scope.name + "/")):
                targets = scope.targets("exports")  # self-reference: the package's own exports first
            else:
                continue
            while targets:
                target = targets.pop()
                if "*" in target:  # a pattern's target: what the ``*`` may stand for, whole
                    prefix = target[: target.index("*")]
                    place = prefix.rstrip("/") if prefix.endswith("/") else os.path.dirname(prefix)
                    if place in ("", "."):
                        whole = True
                    elif not place.startswith(".."):
                        out.setdefault(place)
                    continue
                found = _resolved(base, target)
                if found is None:  # absent, or out of the workspace: its directory, as it is
                    place = os.path.dirname(target)
                    if place and not place.startswith(".."):
                        out.setdefault(place)
                    continue
                is_dir = os.path.isdir(os.path.join(base, found))
                place = found if is_dir else os.path.dirname(found)
                out.setdefault(place or _ROOT_FILES)
                if is_dir and found not in mains:  # a directory loads its package.json's "main"
                    mains.add(found)
                    targets += _main_targets(base, found)
                if not _in_node_modules(found) and is_node_script(os.path.join(base, found)):
                    queue.append(found)
    places = [p for p in out if p != "."]  # the whole root is no module's directory
    if whole:
        places.append(_WHOLE_WORKSPACE)
    if set(queue) - read:
        return places, [
            f"hook node scripts load more than {MAX_NODE_MODULES_READ} modules from the workspace by a "
            "relative path (each is read for what it loads in turn)"
        ]
    return places, []


def runs_from_node_modules(root: Path, rels: Iterable[str]) -> bool:
    """Whether any of ``rels`` (by its real path) lies in a ``node_modules``: a node tool run from
    the workspace, which reads its config there (at the root at least) and runs what it names."""
    base = str(root)
    for rel in rels:
        real = os.path.realpath(os.path.join(base, rel))
        if real.startswith(base.rstrip(os.sep) + os.sep) and _in_node_modules(os.path.relpath(real, base)):
            return True
    return False


def root_node_scripts(root: Path) -> list[str]:
    """The root's own ``.js``/``.cjs``/``.mjs`` files (a tool's config among them), up to the
    bound of one recorded directory (past it the root's record refuses the hook anyway)."""
    try:
        with os.scandir(root) as entries:
            names = [e.name for e in itertools.islice(entries, 2000)]
    except OSError:
        return []
    return sorted(n for n in names if n.endswith(_SCRIPT_NAMES))


def _in_node_modules(rel: str) -> bool:
    return "node_modules" in rel.split("/")


def _scopes(directory: str) -> list[str]:
    """``package.json`` from ``directory`` up to the workspace root: the nearest present one is the
    script's package scope (``type``, ``imports``); one planted nearer would be."""
    parts = [p for p in directory.split("/") if p]
    return ["/".join([*parts[:end], "package.json"]) for end in range(len(parts), -1, -1)]


class _Scope:
    """The nearest present ``package.json`` of a script (its package scope): its ``name`` and what
    its ``imports`` and ``exports`` map to."""

    def __init__(self, where: str, data: dict[str, object]) -> None:
        self.where = where
        self.data = data
        name = data.get("name")
        # self-reference resolves through "exports" only (node: ERR_PACKAGE_PATH_NOT_EXPORTED without)
        self.name = name if isinstance(name, str) and name and "exports" in data else ""

    def targets(self, key: str) -> list[str]:
        """Workspace paths (``*`` patterns kept) ``key``'s map may send a specifier to."""
        return [
            os.path.normpath(os.path.join(self.where, t)) for t in _strings(self.data.get(key)) if t.startswith("./")
        ]


def _scope(base: str, scopes: list[str]) -> _Scope:
    """The nearest present ``package.json`` of ``scopes``; an empty scope when none, or when the
    nearest cannot be read (its maps are then not followed: node fails on it too)."""
    for scope in scopes:
        try:
            data = read_manifest(os.path.join(base, scope))
        except FileNotFoundError:
            continue
        if data is None:
            break
        return _Scope(os.path.dirname(scope), data)
    return _Scope("", {})


def _main_targets(base: str, directory: str) -> list[str]:
    """What requiring ``directory`` loads by its ``package.json``'s ``main`` (which may lie out of
    it: ``"main": "../src/main.js"``)."""
    try:
        data = read_manifest(os.path.join(base, directory, "package.json"))
    except FileNotFoundError:
        return []
    main = data.get("main") if data is not None else None
    return [os.path.normpath(os.path.join(directory, main))] if isinstance(main, str) and main else []


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _resolved(base: str, target: str) -> str | None:
    """The workspace path node loads for ``target`` (a file with node's suffixes, or a directory),
    None when absent or out of the workspace."""
    if target.startswith(".."):
        return None
    for suffix in _SUFFIXES:
        path = os.path.join(base, target + suffix)
        if os.path.isfile(path) or (not suffix and os.path.isdir(path)):
            real = os.path.realpath(path)
            if real != base and not real.startswith(base.rstrip(os.sep) + os.sep):
                return None
            return os.path.relpath(real, base)
    return None
