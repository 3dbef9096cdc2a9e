"""Where the host process loads its own code from stays read-only in the sandbox.

shellrt runs on the host and imports lazily (a tool's dependency on first use, a backend when
a session picks it). Run from a virtual environment inside the project (``.venv``) or from a
source tree below the workspace, its interpreter's prefix and ``sys.path`` entries lie in a
writable root: a command wrote a module there, or a ``.pth`` file every later start of that
interpreter runs, and the host ran it unsandboxed, as the caller (red team, round 16). Each
such directory strictly inside a writable root is bound read-only (and pinned: its parents are
mount points, so ``mv`` cannot swap a writable directory in at its path).

An entry that *is* a writable root (``PYTHONPATH=.`` run from the project), or holds one whose
first directory there is a name the host imports, cannot be made read-only without taking the
workspace away: a command adds a top-level module (``anyio.py``) that shadows the real one for
this process's lazy imports and the next run's start-up (round 17). `shadowing_roots` names
them; the backends refuse such a root (``python -m`` run from the workspace: `shellrt.__main__`
drops that entry first, round 16).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sandbox._namefold import fold_name, fold_path
from sandbox.errors import SandboxPolicyError

__all__ = ["checked_host_code_places", "host_code_places", "host_code_reason", "shadowing_roots"]

_log = logging.getLogger(__name__)


def _code_places() -> set[str]:
    """Real paths the running interpreter loads code from: its prefixes, its executable's
    directory and every ``sys.path`` entry (an empty entry: the current directory)."""
    places = {sys.prefix, sys.base_prefix, os.path.dirname(sys.executable or "")}
    places.update(entry or os.getcwd() for entry in sys.path if isinstance(entry, str))
    out = set()
    for place in places:
        if not place:
            continue
        try:
            real = os.path.realpath(place)
        except (OSError, ValueError):
            continue
        if os.path.exists(real):
            out.add(real)
    return out


def _forms(root: Path) -> set[str]:
    return {os.path.normpath(str(root)), os.path.realpath(root)}


def host_code_places(roots: Sequence[Path]) -> tuple[list[Path], list[Path]]:
    """(each place of `_code_places` strictly inside a writable root, shortest first -- a venv's
    prefix and its site-packages are both listed, the binds nest; each writable root that is, or
    lies below, such a place: it cannot be made read-only)."""
    places = _code_places()
    inside: list[Path] = []
    exposed: list[Path] = []
    for root in roots:
        forms = _forms(root)
        for place in places:
            if any(place != form and place.startswith(form.rstrip("/") + "/") for form in forms):
                inside.append(Path(place))
            elif any(form == place or form.startswith(place.rstrip("/") + "/") for form in forms):
                exposed.append(root)
            else:
                _folded_place(place, forms, root, inside, exposed)
    return sorted(set(inside), key=lambda p: (len(p.parts), str(p))), list(dict.fromkeys(exposed))


def _folded_place(place: str, forms: set[str], root: Path, inside: list[Path], exposed: list[Path]) -> None:
    """`host_code_places` for a place and a root spelt otherwise (``/x/ws/.venv``, root ``/x/WS``:
    one directory on a folding filesystem; red team round 27 fold2). Inside: named as the root
    spells it (the backends bind it below the root), when folding kept the root's length; else as
    the place spells it (still bound read-only). Fails closed: on a case-sensitive filesystem the
    extra bind is of a directory that exists."""
    folded = fold_path(place)
    for form in forms:
        top = fold_path(form.rstrip("/"))
        if folded != top and folded.startswith(top + "/"):
            head = form.rstrip("/")
            same = len(top) == len(head) and fold_path(place[: len(head)]) == top
            inside.append(Path(head + place[len(head) :]) if same else Path(place))
            return
        if folded == top or top.startswith(folded.rstrip("/") + "/"):
            exposed.append(root)
            return


def checked_host_code_places(roots: Sequence[Path], *, backend: str, other_fix: str) -> list[Path]:
    """`host_code_places` for a backend about to start over ``roots``: refuses a root through
    which a command would shadow the host's modules (`shadowing_roots`; a `SandboxPolicyError`,
    so ``auto`` does not fall back to no sandbox), warns about each root that is, or lies below,
    a place this Python imports from (it cannot be made read-only), and returns the places inside
    the roots, to be bound read-only. ``other_fix``: the backend's own way out, for the message."""
    shadowing = shadowing_roots(roots)
    if shadowing:
        root, entry = shadowing[0]
        raise SandboxPolicyError(
            f"{backend}: writable root {root} is on this Python's import path ({entry}: PYTHONPATH, an "
            "editable install (`pip install -e`) of it, `python -m` or the embedding program's sys.path): "
            "a command could write a module the host imports later, unsandboxed, as you. Fix: remove it "
            "from PYTHONPATH (e.g. unset PYTHONPATH, or point it outside the workspace), install it "
            f"non-editable (`pip install .`), or {other_fix}"
        )
    inside, exposed = host_code_places(roots)
    for root in exposed:
        _log.warning(
            "%s: writable root %s is (or lies below) a place this Python imports from: a command can "
            "add modules the host imports later, unsandboxed. Run shellrt from outside the workspace "
            "(an interpreter or venv elsewhere, no PYTHONPATH or `python -m` from it)",
            backend,
            root,
        )
    return inside


def _path_entries() -> set[str]:
    """This process's ``sys.path`` entries, resolved (an empty entry is the current directory)."""
    entries = set()
    for entry in sys.path:
        if not isinstance(entry, str):
            continue
        try:
            entries.add(os.path.realpath(entry or os.getcwd()))
        except (OSError, ValueError):
            continue
    return entries


def shadowing_roots(roots: Sequence[Path]) -> list[tuple[Path, str]]:
    """(root, the ``sys.path`` entry) for each writable root through which a command could put a
    top-level module where this interpreter imports from: the root *is* an entry, or lies below
    one and its first directory there is a name the host imports (standard library, loaded, or
    on ``sys.path``). A root below an entry under another name (``/tmp/x`` on the path, a
    workspace ``/tmp/x/work17/ws``) reaches no import and is not named."""
    entries = _path_entries()
    forms = {f for r in roots for f in _forms(r)}
    # Entries at or above a root: their own listings are the workspace's files, not host imports.
    above = tuple(sorted(e for e in entries if any(f == e or f.startswith(e.rstrip("/") + "/") for f in forms)))
    found: list[tuple[Path, str]] = []
    names: frozenset[str] | None = None
    for root in roots:
        for entry in sorted(entries):
            firsts = {
                form[len(entry.rstrip("/")) + 1 :].split("/", 1)[0]
                for form in _forms(root)
                if form.startswith(entry.rstrip("/") + "/")
            }
            if entry in _forms(root):
                found.append((root, entry))
                break
            if firsts:
                names = names if names is not None else _importable(above)
                if any(first.split(".", 1)[0] in names for first in firsts):
                    found.append((root, entry))
                    break
    return found


#: Module files a started interpreter runs from any directory on its path, unasked.
_START_UP = frozenset({"sitecustomize", "usercustomize"})
#: ((roots, sys.path, prefixes, cwd), (places inside a root, sys.path entries at or above one)).
_reason_cache: dict[object, tuple[tuple[str, ...], tuple[str, ...]]] = {}
#: sys.path -> top-level module names importable from it (listed once per path).
_names_cache: dict[tuple[str, ...], frozenset[str]] = {}
#: [len(sys.modules), the top-level names loaded then].
_loaded: list[Any] = [-1, frozenset()]
#: [`_importable`'s two parts last folded, their names folded].
_folded_names: list[Any] = [None, frozenset()]


def _key(roots: Sequence[str]) -> object:
    cwd = os.getcwd() if "" in sys.path else ""
    return (tuple(roots), tuple(p for p in sys.path if isinstance(p, str)), sys.prefix, sys.executable, cwd)


def _places_for(roots: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    key = _key(roots)
    found = _reason_cache.get(key)
    if found is not None:
        return found
    inside, _ = host_code_places([Path(r) for r in roots])
    entries = _path_entries()
    forms = {f for r in roots for f in _forms(Path(r))}
    exposed = tuple(
        e for e in entries if any(f == e or f.startswith(e.rstrip("/") + "/") for f in forms)
    )
    if len(_reason_cache) >= 64:
        _reason_cache.clear()
    found = (tuple(str(p) for p in inside), exposed)
    _reason_cache[key] = found
    return found


def _importable(exposed: tuple[str, ...]) -> frozenset[str]:
    """Top-level module names the host may import: the standard library's, what is loaded, and
    what the other ``sys.path`` directories offer (listed once per ``sys.path``; the exposed
    ones' own entries are the workspace's files, not names the host already imports)."""
    path = tuple(p for p in sys.path if isinstance(p, str))
    names = _names_cache.get(path)
    if names is None:
        found = set(sys.stdlib_module_names) | _START_UP
        for entry in path:
            try:
                if os.path.realpath(entry or ".") in exposed:
                    continue
                listing = os.listdir(entry or ".")
            except OSError:
                continue
            found.update(n.split(".", 1)[0] for n in listing)
        names = frozenset(found)
        _names_cache.clear()
        _names_cache[path] = names
    if _loaded[0] != len(sys.modules):  # recounted only when a module was loaded since
        _loaded[:] = [len(sys.modules), frozenset(m.split(".", 1)[0] for m in list(sys.modules))]
    loaded: frozenset[str] = _loaded[1]
    return names | loaded


def _importable_folded(exposed: tuple[str, ...]) -> frozenset[str]:
    """`_importable`, every name folded (kept while that set is the same object)."""
    _importable(exposed)  # brings both parts up to date
    parts = (next(iter(_names_cache.values()), frozenset()), _loaded[1])
    last = _folded_names[0]
    if last is None or last[0] is not parts[0] or last[1] is not parts[1]:
        _folded_names[:] = [parts, frozenset(fold_name(n) for n in parts[0] | parts[1])]
    found: frozenset[str] = _folded_names[1]
    return found


def _below(path: str, folded: str, place: str) -> str | None:
    """What of ``path`` lies below ``place`` (as spelt, else both folded), or None."""
    top = place.rstrip("/") + "/"
    if path.startswith(top):
        return path[len(top) :]
    ftop = fold_path(top)
    return folded[len(ftop) :] if folded.startswith(ftop) else None


def host_code_reason(path: str, roots: Sequence[str]) -> str | None:
    """Why writing ``path`` (a host path, symlinks resolved) puts code where this host process
    loads it from, or None (red team round 16: the file tools run on the host and wrote the
    venv the host imports from, which `host_code_places` keeps read-only for commands only).

    Below a place of `host_code_places` inside a root (a project ``.venv`` shellrt runs from):
    every file. In a ``sys.path`` entry that is, or holds, a root (``PYTHONPATH`` at the
    workspace): a ``.pth`` file, ``sitecustomize``/``usercustomize``, or a top-level module or
    package whose name the host imports (the standard library's, a loaded one's, or one found
    on ``sys.path``): it would shadow it."""
    inside, exposed = _places_for(roots)
    # Names compared folded too (`sandbox._namefold`, red team round 27 fold2): on a folding
    # filesystem ``.VENV/lib/...`` is the venv and ``X.PTH`` a file in the site directory; elsewhere
    # they are refused too (fails closed).
    folded = fold_path(path)
    for place in inside:
        if _below(path, folded, place):
            return f"code the host's Python loads ({place} is where shellrt's own interpreter imports from)"
    for entry in exposed:
        rest = _below(path, folded, entry)
        if rest is None:
            continue
        first = rest.split("/", 1)[0]
        module = first.split(".", 1)[0]
        if (
            fold_name(first).endswith(".pth")
            or module in _importable(exposed)
            or fold_name(module) in _importable_folded(exposed)
        ):
            return (
                f"code the host's Python may import ({entry} is on shellrt's own sys.path: "
                f"{first} would shadow or start a module there)"
            )
    return None
