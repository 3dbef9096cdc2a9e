"""Line numbers of keys and values in a settings file's JSON text, within a bounded cost.

Why: diagnostics say ``file:line``, found by searching the raw text (best effort: the first
occurrence at or after a cursor). Each lookup searched from the start and counted newlines from
the start, once per rule, hook or unknown key: a workspace's 3 MB ``.claude/settings.json`` of
40,000 hooks held every session's start (and ``shellrt trust add``) for 103 s, one of 80,000
unknown ``permissions`` keys 73 s, quadratic in the count (red team round 33). Newlines are now
indexed once, and the searches of one file share a budget: past it, a line is given as 1.
"""

from __future__ import annotations

import bisect
import json
import re

__all__ = ["JsonLocator"]

#: Characters the searches of one file may scan in all (str.find: tens of milliseconds).
SEARCH_BUDGET = 64 << 20


class JsonLocator:
    """Finds line numbers of keys and values in the raw JSON ``text``."""

    def __init__(self, text: str, budget: int = SEARCH_BUDGET) -> None:
        self.text = text
        self._left = budget
        self._newlines: list[int] | None = None

    def line_at(self, offset: int) -> int:
        if self._newlines is None:
            self._newlines = [m.start() for m in re.finditer("\n", self.text)]
        return bisect.bisect_left(self._newlines, max(offset, 0)) + 1

    def _find(self, needle: str, start: int = 0) -> int:
        if self._left <= 0:
            return -1
        found = self.text.find(needle, start)
        self._left -= (len(self.text) if found == -1 else found + len(needle)) - start
        return found

    def key_offset(self, key: str) -> int:
        found = self._find(json.dumps(key) + ":")
        if found == -1:
            found = self._find(json.dumps(key))
        return max(found, 0)

    def key_line(self, key: str) -> int:
        return self.line_at(self.key_offset(key))

    def find_value(self, value: object, start: int) -> int:
        try:
            needle = json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):
            return start
        found = self._find(needle, start)
        return found if found != -1 else start
