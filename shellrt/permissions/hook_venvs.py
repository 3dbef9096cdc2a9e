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
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path

__all__ = ["venv_paths"]

_PYTHON = re.compile(r"(?:python|pypy)[0-9.]*")
_CFG = "pyvenv.cfg"


def venv_paths(root: Path, rels: Iterable[str]) -> tuple[list[str], list[str]]:
    """(``pyvenv.cfg`` files to record, environment directories to record whole), workspace-relative,
    for every Python interpreter among ``rels`` or named by their ``#!`` lines that lies in the
    workspace (by its path or its real path)."""
    base = str(root)
    files: list[str] = []
    dirs: list[str] = []
    for rel in rels:
        for interpreter in (rel, _shebang(base, rel)):
            inside = _inside(base, interpreter) if interpreter is not None else None
            if inside is None or not _PYTHON.fullmatch(os.path.basename(inside)):
                continue
            here = os.path.dirname(inside)
            for place in dict.fromkeys((here, os.path.dirname(here))):
                cfg = os.path.join(place, _CFG) if place else _CFG
                files += [cfg] if cfg not in files else []
                if os.path.isfile(os.path.join(base, cfg)) and (place or ".") not in dirs:
                    dirs.append(place or ".")
            files += [inside] if inside != rel and inside not in files else []
    return files, dirs


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
