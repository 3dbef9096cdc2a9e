"""The parse limits: a parse over the CPU-time limit is an error (never read-only)."""

from __future__ import annotations

import pytest

from shellrt.analysis import parse
from shellrt.analysis.analyze import _analyze_bash


def test_slow_parse_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parse, "PARSE_TIMEOUT_S", -1.0)
    result = parse.parse_bash("ls -la")
    assert result.error is not None and result.error.startswith("parse took")
    analysis = _analyze_bash("ls -la", fast=False)
    assert not analysis.read_only
    assert not analysis.parse_ok
    assert analysis.reasons[0].startswith("parse took")


def test_fast_parse_is_not_an_error() -> None:
    result = parse.parse_bash("ls -la")
    assert result.error is None and result.root is not None
