"""Stop 63 (lead): deep JSON is refused before the decoder recurses to the interpreter's limit.

`strict_loads` (hook answers, the MCP and JSONL wires) let ``json`` recurse until `RecursionError`.
Whatever ran at that depth meanwhile failed as well: CI138's run of round 20's "a guard whose answer
is too deep" test failed on an unraisable `RecursionError` from a garbage collection's finalizer that
ran while the decoder was ~1,000 frames deep. The test makes the collection certain (a threshold of
one allocation) and gives it a finalizer that needs a few dozen frames.
"""

from __future__ import annotations

import gc
import sys
from typing import Any

import pytest

from shellrt.permissions.strict_json import MAX_NESTING, strict_loads


def _frames(n: int) -> int:
    return 0 if n == 0 else 1 + _frames(n - 1)


class _NeedsFrames:
    def __del__(self) -> None:
        _frames(200)


def test_a_finalizer_running_during_a_deep_answer_is_not_starved_of_frames() -> None:
    """The collection is timed to come ~850 allocations into the parse: the decoder makes one list
    a level, so it comes when the decoder is ~850 levels deep (the interpreter's limit is 1,000)."""
    unraisable: list[Any] = []
    old_hook, old_threshold = sys.unraisablehook, gc.get_threshold()
    sys.unraisablehook = unraisable.append
    try:
        gc.collect()
        gc.disable()
        a: list[Any] = [_NeedsFrames()]
        a.append(a)  # garbage in a cycle: only a collection frees it
        del a
        gc.set_threshold(850)
        gc.enable()
        with pytest.raises(RecursionError):
            strict_loads("[" * 100_000 + "]" * 100_000)
    finally:
        gc.enable()
        gc.set_threshold(*old_threshold)
        sys.unraisablehook = old_hook
        gc.collect()
    assert unraisable == [], [u.exc_value for u in unraisable]


def test_nesting_up_to_the_bound_reads_and_strings_do_not_count() -> None:
    assert strict_loads("[" * MAX_NESTING + "]" * MAX_NESTING) is not None
    text = '{"a": "' + "[" * 5000 + '", "b": [1, {"c": "]]]"}]}'
    assert strict_loads(text)["b"][1]["c"] == "]]]"
    with pytest.raises(RecursionError):
        strict_loads("[" * (MAX_NESTING + 1) + "]" * (MAX_NESTING + 1))
