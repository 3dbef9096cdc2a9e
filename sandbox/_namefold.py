"""One spelling for the names a case- or normalisation-insensitive filesystem treats as one.

Why: protections that go by name (a read-denied path, ``.git/hooks``, ``.claude/``) compare
strings, but macOS (APFS, HFS+), Windows and its shares, vfat, and ext4/tmpfs directories with
``+F`` resolve ``.Git/hooks``, ``SECRETS/key`` or ``.claude`` with a zero-width joiner (HFS+) to
the protected file. The tools cannot tell every filesystem on the way, so a name is judged both as
given and folded (fails closed; git refuses these spellings in trees on every platform too).
"""

from __future__ import annotations

import re

__all__ = ["fold_name", "fold_path"]

#: What changes an ASCII path: an upper-case letter, a component ending in a dot or a blank.
_ASCII_FOLDS = re.compile(r"[A-Z]|[. ](?:/|$)")


def _fold_part(part: str) -> str:
    """A name as a folding filesystem compares it: NFC, format characters (zero-width, bidi
    marks, soft hyphen, BOM: HFS+ ignores them) dropped, Unicode case folding, and trailing
    dots and blanks removed (Windows drops them); ``.`` and ``..`` stay."""
    if part in (".", ".."):
        return part
    if part.isascii():
        folded = part.lower()
    else:
        import unicodedata  # here: the CLI's start folds ASCII names only (its import budget)

        text = unicodedata.normalize("NFC", part)
        text = "".join(c for c in text if unicodedata.category(c) != "Cf")
        folded = unicodedata.normalize("NFC", text.casefold())
    return folded.rstrip(". ") or folded


def fold_name(name: str) -> str:
    """One directory entry's name folded (`_fold_part`), cheaper for ASCII: the after-command
    check folds every name it lists."""
    if name.isascii() and name not in (".", ".."):
        folded = name.lower()
        return folded.rstrip(". ") or folded
    return _fold_part(name)


def fold_path(path: str) -> str:
    """``path`` with each component folded (see `_fold_part`); an ASCII lower-case path is
    returned as it is (the common case costs one scan)."""
    if path.isascii() and not _ASCII_FOLDS.search(path):
        return path
    return "/".join(_fold_part(p) if p else p for p in path.split("/"))
