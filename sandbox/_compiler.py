"""The host's C compiler for shellrt's static programs: never one a sandboxed command can change.

Why: the compiler runs on the host, unsandboxed, as the caller (root for a root caller), and so does
everything it starts. `host_which` kept ``PATH`` entries inside writable roots out (round 15, 29),
but a ``CC`` with a slash was used as given, a link in a clean directory could lead into a root, and
the driver finds ``cc1``, ``collect2``, ``as``, ``ld``, specs and libraries below its own install
tree first (relative to where it was started). A command plants any of those in its workspace and
the next cold build runs it (red team round 30, mend). Checked here: the compiler's path, each link
to it, and each directory it says it searches (``-print-search-dirs``). Its ``PATH`` is
`host_path` (`_static_build._compiler_env`).
"""

from __future__ import annotations

import os
import shutil
import subprocess

from sandbox._hostpath import host_path
from sandbox._hostprog import writable_place

__all__ = ["CompilerRefused", "check_search_dirs", "find_compiler"]

_DO = "set CC to a compiler installed outside every workspace (e.g. CC=/usr/bin/gcc), or unset it"


class CompilerRefused(LookupError):
    """No compiler shellrt may run: the message says where it lies and what to do."""


def _why(place: str) -> str:
    root = " (or, as root, a place another user can write)" if os.geteuid() == 0 else ""
    return f"{place} lies in a sandbox's writable root{root}: a command there could change it"


def _on_path(name: str) -> str | None:
    """``name`` on `host_path`, skipping a hit a command could change (a link into a root)."""
    for entry in host_path().split(os.pathsep):
        found = shutil.which(name, path=entry)
        if found is not None and writable_place(found) is None:
            return found
    return None


def find_compiler() -> str:
    """``$CC`` (a name on `host_path`, or an absolute path) or the first of cc, gcc, clang there;
    CompilerRefused when ``$CC`` lies where a command could change it, or none is found."""
    named = os.environ.get("CC")
    if not named:
        for name in ("cc", "gcc", "clang"):
            if (found := _on_path(name)) is not None:
                return found
        raise CompilerRefused("no C compiler")
    if "/" not in named:
        if (found := _on_path(named)) is None:
            raise CompilerRefused(f"no C compiler ($CC={named!r} not found outside every writable root)")
        return found
    if not named.startswith("/"):
        raise CompilerRefused(
            f"$CC={named!r} is a relative path (looked up from a directory commands may write): "
            "set CC to a program name or an absolute path"
        )
    if (place := writable_place(named)) is not None:
        raise CompilerRefused(f"$CC={named!r}: {_why(place)} and the host would run it; {_DO}")
    if not (os.path.isfile(named) and os.access(named, os.X_OK)):
        raise CompilerRefused(f"no C compiler ($CC={named!r} not found)")
    return named


def check_search_dirs(cc: str, env: dict[str, str], cwd: str) -> None:
    """CompilerRefused unless every directory ``cc`` (started as the build starts it) searches for
    its programs and libraries lies outside every root: a planted ``cc1``, ``as``, specs file or
    ``crt1.o`` there would run on the host or go into the program."""
    proc = subprocess.run(
        [cc, "-print-search-dirs"], env=env, cwd=cwd, capture_output=True, text=True, timeout=60, check=False
    )
    dirs: list[str] = []
    for line in proc.stdout.splitlines():
        key, _, value = line.partition(": ")
        if key in ("install", "programs", "libraries"):
            dirs += [d for d in value.lstrip("=").split(os.pathsep) if d]
    if proc.returncode != 0 or not dirs:
        raise CompilerRefused(
            f"{cc} did not say where it finds its programs (-print-search-dirs failed): "
            "shellrt cannot check them; set CC to gcc or clang installed outside every workspace"
        )
    for d in dirs:
        if not d.startswith("/"):
            raise CompilerRefused(f"{cc} searches the relative directory {d!r}: {_DO}")
        if (place := writable_place(d)) is not None:
            raise CompilerRefused(f"{cc} finds its programs or libraries in {d}: {_why(place)}; {_DO}")
