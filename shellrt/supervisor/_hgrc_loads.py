"""The files an accepted Mercurial/Sapling repository config has ``hg``/``sl`` load.

Why (red team round 19): ``.hg/hgrc`` and ``.sl/config`` are protected, the files they name were
not: ``%include ../.hgrc-shared`` (a tracked file teams share) is read as more of the same config
(``[extensions]`` there load Python); ``[extensions] x = tools/hgext.py`` and a ``[hooks]``
``python:tools/hooks.py:check`` load that file at every ``hg`` command (``hg status``, a prompt's
branch segment). A relative extension path is resolved from where ``hg`` runs, usually the
repository's root: both it and the config's directory are listed. Shell hooks that name a script
(``sh tools/x.sh``) are not read (docs/security.md: left).
"""

from __future__ import annotations

import os
import shlex
from typing import Final

from sandbox._namefold import fold_name

__all__ = ["hgrc_loads", "is_hg_config"]

_NAMES: Final = frozenset({(".hg", "hgrc"), (".hg", "hgrc-not-shared"), (".sl", "config")})


def is_hg_config(path: str) -> bool:
    """Whether ``path`` is a repository config of Mercurial (``.hg/hgrc``) or Sapling (``.sl/config``)."""
    # Folded (`sandbox._namefold`, red team round 27 fold2): ``.HG/HGRC`` is the config on a
    # folding filesystem; elsewhere it is judged one too (fails closed).
    return (fold_name(os.path.basename(os.path.dirname(path))), fold_name(os.path.basename(path))) in _NAMES


def hgrc_loads(directory: str, text: str) -> frozenset[str]:
    """The paths the config in ``directory`` (its ``.hg``) names for hg to read or import."""
    repo = os.path.dirname(directory)
    found: set[str] = set()
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;" or raw[:1].isspace():
            continue
        if line.startswith("%include"):
            _add(found, line[len("%include") :].strip(), (directory,))
        elif line.startswith("[") and "]" in line:
            section = line[1 : line.index("]")].strip().lower()
        elif "=" in line and section in ("extensions", "hooks"):
            value = line.split("=", 1)[1].strip()
            if section == "hooks":
                if not value.startswith("python:"):
                    for word in _script_words(value):
                        _add(found, word, (repo,))
                    continue
                value = value[len("python:") :].rsplit(":", 1)[0] if ".py:" in value else ""
            elif value.startswith("!") or ("/" not in value and not value.endswith(".py")):
                continue  # disabled, or a module name found on sys.path
            elif not value.endswith(".py"):  # a package directory: Python imports its __init__.py
                _add(found, os.path.join(value, "__init__.py"), (repo, directory))
            _add(found, value, (repo, directory))
    return frozenset(found)


#: A hook's word that names a file though it has no ``/`` (``sh hook.sh``).
_SCRIPT_SUFFIXES: Final = (".sh", ".bash", ".py", ".pl", ".rb", ".js", ".zsh")


def _script_words(command: str) -> list[str]:
    """The words of a shell hook that name a file relative to where it runs (not options, not
    absolute paths: those are the host's)."""
    try:
        words = shlex.split(command, comments=True)
    except ValueError:
        words = command.split()
    return [
        w
        for w in words
        if not w.startswith(("-", "/")) and ("/" in w or w.endswith(_SCRIPT_SUFFIXES)) and "=" not in w
    ]


def _add(found: set[str], value: str, bases: tuple[str, ...]) -> None:
    if value and "$" not in value and not value.startswith("~"):
        found.update(os.path.normpath(os.path.join(base, value)) for base in bases)
