"""The names in a directory that are one given name in NFC, a settled directory's listing kept.

Why: a deny whose fixed prefix is not ASCII looks for every spelling on disk of that prefix
(``cafe`` + U+0301 for the rule's ``café``, `rules._spellings_on_disk`), on every check the rule
does not match at once. Listing the parent each time made one check of a 50,000-entry workspace
56 ms (red team round 56, review b). A listing is kept by the directory's identity *and* its
mtime and ctime (an entry made, removed or renamed changes both; ``utime`` cannot set ctime
back), and only when both were at least `SETTLED_S` old when it was read: a change in the same
clock tick as the listing (timestamps are coarse) then still changes them. The directory is
opened once, its ``fstat`` and listing taken through that descriptor (a swapped link cannot pair
one directory's identity with another's names).
"""

from __future__ import annotations

import os
import threading
import time
import unicodedata
from collections import OrderedDict

__all__ = ["SETTLED_S", "names_in_nfc"]

#: How old (seconds) a directory's mtime and ctime must be for its listing to be kept.
SETTLED_S = 2.0
#: Listings kept (the least recently used goes first).
_KEPT_DIRS = 32
#: Non-ASCII names of one directory past which its listing is not kept (read again each time).
_KEPT_NAMES = 4096

_Key = tuple[int, int, int, int]
_kept: OrderedDict[_Key, dict[str, tuple[str, ...]]] = OrderedDict()
_lock = threading.Lock()


def names_in_nfc(parent: str, wanted: str) -> set[str]:
    """The entries of directory ``parent`` whose NFC is ``wanted`` (itself NFC), with ``wanted``
    itself (the caller checks which exist: an ASCII name is its own NFC). Raises `OSError`."""
    fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        key = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
        with _lock:
            index = _kept.get(key)
            if index is not None:
                _kept.move_to_end(key)
        if index is None:
            now = time.time_ns()
            index = _index(os.listdir(fd))
            settled = now - max(st.st_mtime_ns, st.st_ctime_ns) >= SETTLED_S * 1e9
            if settled and sum(map(len, index.values())) <= _KEPT_NAMES:
                with _lock:
                    _kept[key] = index
                    while len(_kept) > _KEPT_DIRS:
                        _kept.popitem(last=False)
    finally:
        os.close(fd)
    return {wanted, *index.get(wanted, ())}


def _index(names: list[str]) -> dict[str, tuple[str, ...]]:
    """The non-ASCII ``names`` by their NFC (an ASCII name is its own NFC: not kept)."""
    by: dict[str, list[str]] = {}
    for name in names:
        if not name.isascii():
            by.setdefault(unicodedata.normalize("NFC", name), []).append(name)
    return {nfc: tuple(found) for nfc, found in by.items()}
