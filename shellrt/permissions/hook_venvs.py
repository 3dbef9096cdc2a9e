"""A hook's Python interpreter that lives in the workspace: the environment it builds at start-up.

Why (red team, round 47): a hook ``"$CLAUDE_PROJECT_DIR"/.venv/bin/python3 .claude/hooks/g.py``
(a virtual environment made with ``--copies``, or a script whose ``#!`` line names such an
interpreter) recorded the binary and its ``bin/`` only. Python reads, before the hook's first
line, ``pyvenv.cfg`` beside its binary or one directory up (``home`` chooses the standard
library), then every ``.pth`` file in that environment's ``site-packages`` (a line starting with
``import`` is run), ``sitecustomize``, and later the packages the script imports: a sandboxed
command's ``site-packages/x.pth`` ran on the host through the operator's hook. Now both
``pyvenv.cfg`` places of such an interpreter are recorded (absent ones as absent: one made later
is new), and the directory of a present one -- the environment -- whole; past the bounds of a
recorded tree the hook refuses (a real environment: run the hook with an interpreter outside the
workspace). A ``venv`` whose ``bin/python`` links out of the workspace was refused already.

An interpreter outside the workspace may import from it by its own configuration: a development
install the operator made (``pip install -e .``: a ``.pth`` line naming ``<ws>/src``, or
setuptools' editable finder whose ``MAPPING`` names ``<ws>/pkg/proj``). The hook's ``import
myproj`` ran a command's rewrite of ``src/myproj/__init__.py`` (round 47). Such an interpreter's
site directories (its environment's, the system's when it includes them, the user's) are read
for their ``.pth`` path lines and the ``MAPPING`` of the editable finders their ``import`` lines
name (`_static_entries`, no process started: starting this machine's Python costs 0.6-0.9 s); an
interpreter that is a script (a pyenv shim) is asked instead (`_asked`: ``-E -c``, from ``/``,
cached per binary for `_PATH_TTL_S`). Each entry inside the workspace is recorded whole.
"""

from __future__ import annotations

import ast
import glob
import json
import os
import re
import shutil
import stat
import subprocess
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from sandbox._hostpath import host_env, host_path
from shellrt.permissions.hook_read import read_regular
from shellrt.permissions.python_source import UnparsableSource, parse_python

__all__ = ["venv_paths"]

_PYTHON = re.compile(r"(?:python|pypy)[0-9.]*")
_CFG = "pyvenv.cfg"
#: Seconds one interpreter's import path is reused (each hook run records again).
_PATH_TTL_S = 30.0
_PATH_TIMEOUT_S = 10.0
#: What an interpreter is asked: its ``sys.path`` and the paths setuptools' editable finders map.
_ASK = (
    "import json, sys\n"
    "out = [p for p in sys.path if p]\n"
    "for name, mod in list(sys.modules.items()):\n"
    "    mapping = getattr(mod, 'MAPPING', None) if name.startswith('__editable__') else None\n"
    "    if isinstance(mapping, dict):\n"
    "        out += [str(v) for v in mapping.values()]\n"
    "print(json.dumps(out))\n"
)
_paths_lock = threading.Lock()
_paths: dict[tuple[str, str, int, int], tuple[float, tuple[str, ...] | None]] = {}


def venv_paths(root: Path, rels: Iterable[str], interpreters: Iterable[str] = ()) -> tuple[list[str], list[str]]:
    """(``pyvenv.cfg`` files to record, directories to record whole), workspace-relative, for every
    Python interpreter among ``rels``, named by their ``#!`` lines, or in ``interpreters`` (the
    programs of a hook's ``python …`` commands): one in the workspace (by its path or its real
    path) has its environment recorded; one outside, the workspace directories it imports from."""
    base = str(root)
    files: list[str] = []
    dirs: list[str] = []
    outside: list[str] = []
    for rel in rels:
        for interpreter in (rel, _shebang(base, rel)):
            # ``#!/usr/bin/env python3``: a bare name is found on PATH (the hook's has no
            # workspace entry), never in the workspace.
            bare = interpreter is not None and interpreter != rel and "/" not in interpreter
            inside = _inside(base, interpreter) if interpreter is not None and not bare else None
            if inside is None and interpreter is not None and interpreter != rel:
                outside.append(interpreter)
            if inside is None or not _PYTHON.fullmatch(os.path.basename(inside)):
                continue
            here = os.path.dirname(inside)
            for place in dict.fromkeys((here, os.path.dirname(here))):
                cfg = os.path.join(place, _CFG) if place else _CFG
                files += [cfg] if cfg not in files else []
                if os.path.isfile(os.path.join(base, cfg)) and (place or ".") not in dirs:
                    dirs.append(place or ".")
            files += [inside] if inside != rel and inside not in files else []
    for interpreter in dict.fromkeys([*outside, *interpreters]):
        for place in _workspace_imports(base, interpreter):
            dirs += [place] if place not in dirs else []
    return files, dirs


def _workspace_imports(base: str, interpreter: str) -> list[str]:
    """The workspace directories (relative; ``.`` the root) a Python interpreter outside the
    workspace imports from by its own configuration; an interpreter that cannot be asked records
    nothing (its hook fails to start the same way)."""
    if not _PYTHON.fullmatch(os.path.basename(interpreter)):
        return []
    # Looked up as the hook's shell will (`hookproc`: host_env), never in a place commands write.
    found = shutil.which(interpreter, path=host_path(None, (base,))) if "/" not in interpreter else interpreter
    if found is None or not os.path.isabs(found):
        return []  # not found, or relative
    if _inside(base, found) is not None:
        # In the workspace by name: its environment is hashed instead. By its real path only (an
        # outside link to a file commands may write): never asked here, the tree whole.
        return [] if os.path.normpath(found).startswith(base.rstrip(os.sep) + os.sep) else ["."]
    entries = _import_path(os.path.normpath(found), base)  # as named: a venv's link finds its pyvenv.cfg so
    if entries is None:
        return ["."]  # it answered nothing readable: fail closed, the tree whole
    out: list[str] = []
    for entry in entries:
        inside = _inside(base, entry) if os.path.isabs(entry) else None
        if inside is not None and inside not in out:
            out.append(inside)
    return out


#: ``.pth`` files read per site directory, and bytes read of one (beyond: not read).
_MAX_PTH = 1000
_MAX_PTH_BYTES = 1 << 16
_FINDER = re.compile(r"__editable___[\w.]+_finder")


def _import_path(binary: str, base: str) -> tuple[str, ...] | None:
    """``binary``'s workspace-relevant import entries; None when they cannot be known."""
    magic = read_regular(os.path.realpath(binary), 4)
    if magic is None:
        return ()
    return _static_entries(binary) if magic == b"\x7fELF" else _asked(binary, base)


def _static_entries(binary: str) -> tuple[str, ...]:
    """The site directories of the interpreter ``binary`` (as named), their ``.pth`` path lines,
    and the paths the editable finders their ``import`` lines load map packages to."""
    named = os.path.normpath(binary)
    here = os.path.dirname(named)
    venv = next((p for p in (here, os.path.dirname(here)) if os.path.isfile(os.path.join(p, _CFG))), None)
    prefixes: list[str] = []
    system = True
    if venv is not None:
        prefixes.append(venv)
        system = _includes_system(os.path.join(venv, _CFG))
    sites: list[str] = []
    if system:
        prefix = os.path.dirname(os.path.dirname(os.path.realpath(named)))
        prefixes += [prefix, "/usr/local"] if prefix == "/usr" else [prefix]
        sites += glob.glob(os.path.join(os.path.expanduser("~"), ".local", "lib", "python*", "site-packages"))
    for prefix in prefixes:
        for kind in ("site-packages", "dist-packages"):
            sites += glob.glob(os.path.join(glob.escape(prefix), "lib*", "python*", kind))
    entries = list(sites)
    for site in sites:
        try:
            names = sorted(n for n in os.listdir(site) if n.endswith(".pth"))[:_MAX_PTH]
        except OSError:
            continue
        for name in names:
            for line in _head(os.path.join(site, name)).splitlines():
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                if line.startswith(("import ", "import\t")):
                    for module in _FINDER.findall(line):
                        entries += _mapping(os.path.join(site, module + ".py"))
                    continue
                entries.append(os.path.normpath(os.path.join(site, line)))
    return tuple(entries)


def _includes_system(cfg: str) -> bool:
    for line in _head(cfg).splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "include-system-site-packages":
            return value.strip().lower() == "true"
    return False


def _head(path: str) -> str:
    return (read_regular(path, _MAX_PTH_BYTES) or b"").decode("utf-8", "replace")


def _mapping(path: str) -> list[str]:
    """The paths an editable finder module's ``MAPPING`` (setuptools) maps package names to."""
    try:
        tree = parse_python(_head(path))
    except UnparsableSource:
        return []
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, expr = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, expr = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name) and target.id == "MAPPING":
            try:
                value = ast.literal_eval(expr)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                return []
            return [str(v) for v in value.values()] if isinstance(value, dict) else []
    return []


def _asked(binary: str, base: str) -> tuple[str, ...] | None:
    """``binary``'s ``sys.path`` and editable mappings, asked (cached); None when it answers
    nothing readable. ``binary`` is outside the workspace by name and real path (the caller); a
    script (a pyenv shim) looks its own interpreter and tools up on the host's ``PATH`` without
    the workspace's places (`host_env`), as the hook itself will."""
    try:
        info = os.stat(binary)
    except OSError:
        return ()
    key = (binary, base, info.st_ino, info.st_mtime_ns)  # base: the PATH it is asked with
    now = time.monotonic()
    with _paths_lock:
        hit = _paths.get(key)
    if hit is not None and now - hit[0] < _PATH_TTL_S:
        return hit[1]
    env = host_env({k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}, (base,))
    try:
        done = subprocess.run(
            [binary, "-E", "-c", _ASK], cwd="/", env=env, capture_output=True, timeout=_PATH_TIMEOUT_S, check=False
        )
        value = json.loads(done.stdout.decode("utf-8", "replace")) if done.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired, ValueError):
        value = None
    answer = tuple(str(v) for v in value) if isinstance(value, list) else None
    with _paths_lock:
        if len(_paths) > 64:
            _paths.clear()
        _paths[key] = (now, answer)
    return answer


def _shebang(base: str, rel: str) -> str | None:
    """The interpreter a file's ``#!`` line names (``env``'s operand too), as an absolute path or
    relative to the workspace root; None without one."""
    try:
        fd = os.open(os.path.join(base, rel), os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        head = os.read(fd, 256)
    finally:
        os.close(fd)
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").split()
    if words and os.path.basename(words[0]) == "env":
        words = [w for w in words[1:] if not w.startswith("-")]
    return words[0] if words else None


def _inside(base: str, path: str) -> str | None:
    """``path`` (absolute, or relative to the root) as a workspace-relative path, by its path as
    written or its real path; None outside."""
    prefix = base.rstrip(os.sep) + os.sep
    for candidate in (os.path.normpath(os.path.join(base, path)), os.path.realpath(os.path.join(base, path))):
        if candidate.startswith(prefix):
            return os.path.relpath(candidate, base)
    return None
