"""Red team, round 28 (found by the protocol helper, Left): Grep's pattern and glob and Glob's
pattern had no length bound, so a 1 MB invalid pattern held a Grep call 2.3 s and a 1 MB Glob
pattern 3.4 s before any answer. Both are refused at input validation (16,384 characters), with
the field and the bound named; a long but sane pattern is still taken. Failed before: 3 of 3."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from shellrt.tools.glob import MAX_PATTERN_CHARS as GLOB_MAX
from shellrt.tools.glob import GlobInput
from shellrt.tools.grep import MAX_PATTERN_CHARS as GREP_MAX
from shellrt.tools.grep import GrepInput


@pytest.mark.parametrize(
    ("model", "field", "bound"),
    [(GrepInput, "pattern", GREP_MAX), (GrepInput, "glob", GREP_MAX), (GlobInput, "pattern", GLOB_MAX)],
)
def test_a_huge_pattern_is_refused_before_anything_compiles_it(model: type, field: str, bound: int) -> None:
    base = {"pattern": "x"}
    with pytest.raises(ValidationError) as caught:
        model.model_validate({**base, field: "(" * (1 << 20)})
    text = str(caught.value)
    assert field in text and f"at most {bound} characters" in text
    sane = {**base, field: "a" * 500 + "|b"}
    assert getattr(model.model_validate(sane), field) == sane[field]
