"""The files an accepted ``.envrc`` has direnv load into the operator's shell at every ``cd``.

Why (red team round 19): ``.envrc`` itself is protected, the files it names were not.
``source_env_if_exists .envrc.local`` sources that file as bash; ``dotenv`` / ``dotenv_if_exists``
(``.env`` by default) export its variables -- ``LD_PRELOAD``, ``PATH``, ``BASH_ENV`` -- to every
program the operator runs there. Both are git-ignored by convention: no diff shows a planted one.
Only what can be known without running the file is read: a path built from a variable other than
``$PWD`` (or from ``~``) is not followed (named in docs/security.md as left).
"""

from __future__ import annotations

import os
import re
import shlex
from typing import Final

__all__ = ["ENVRC", "envrc_loads"]

ENVRC: Final = ".envrc"
#: direnv's stdlib functions that load a file, and the file each loads when given none.
_LOADERS: Final[dict[str, str | None]] = {
    "dotenv": ".env",
    "dotenv_if_exists": ".env",
    "source_env": None,
    "source_env_if_exists": None,
}
#: Where one simple command ends and the next may start (a loader after ``&&``, ``;``, ``then``).
_SPLIT: Final = re.compile(r"&&|\|\||[;|&()\n]")
_LEADING: Final = frozenset({"{", "if", "then", "else", "elif", "do", "!", "while", "until"})
_PWD: Final = re.compile(r"\$\{PWD\}|\$PWD\b")


def envrc_loads(directory: str, text: str) -> frozenset[str]:
    """The paths (joined to ``directory``, the ``.envrc``'s, as given) its direnv loaders name."""
    found: set[str] = set()
    for part in _SPLIT.split(text):
        words = _words(part)
        while words and words[0] in _LEADING:
            words = words[1:]
        if not words or words[0] not in _LOADERS:
            continue
        arg = words[1] if len(words) > 1 else _LOADERS[words[0]]
        if arg is None:
            continue
        arg = _PWD.sub(lambda _: directory, arg)
        if "$" in arg or "`" in arg or arg.startswith("~"):
            continue  # not known before it runs
        found.add(os.path.normpath(os.path.join(directory, arg)))
    return frozenset(found)


def _words(part: str) -> list[str]:
    try:
        return shlex.split(part, comments=True)
    except ValueError:  # an unbalanced quote: direnv (bash) would fail there too
        return part.split()
