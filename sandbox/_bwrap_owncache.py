"""`sandbox.bwrap._own_masks` worked out again only when what it depends on changed.

It named the budget meeting places and static caches to mask with ~36 ``lstat``s and ``realpath``s
before every command (red team round 26, wave 3: a change must replace the zygote). Its inputs are
a few environment variables, the roots and the names along a few paths: the first are compared as
strings, the names are watched by the kernel (`sandbox._placewatch`). Without inotify (or once a
watch could not be set) every call works them out, as before (red team round 27).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from sandbox._placewatch import PathWatch

__all__ = ["OwnMaskCache"]


class OwnMaskCache:
    """The last answer of ``work_out`` while ``key()`` (cheap: the strings it reads) is the same and
    no name along ``paths()`` (asked only when worked out again) changed. The watch is set before the
    answer is worked out: a change meanwhile is seen at the next call."""

    def __init__(
        self,
        work_out: Callable[[], list[Path]],
        key: Callable[[], tuple[object, ...]],
        paths: Callable[[], list[str]],
    ) -> None:
        self._work_out = work_out
        self._key_of = key
        self._paths = paths
        self._key: tuple[object, ...] | None = None
        self._masks: list[Path] = []
        self._watch: PathWatch | None = None

    def masks(self) -> list[Path]:
        key = self._key_of()
        watch = self._watch
        if watch is not None and key == self._key and not watch.changed():
            return list(self._masks)
        self.close()
        try:
            self._watch = PathWatch(self._paths())
        except OSError:
            self._watch = None  # no inotify: worked out every time
        self._key, self._masks = key, self._work_out()
        return list(self._masks)

    def close(self) -> None:
        watch, self._watch = self._watch, None
        if watch is not None:
            watch.close()
