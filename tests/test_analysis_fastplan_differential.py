"""Differential test: every command string in the analysis and red-team tests, both paths, same result.

The parser-free fast paths (``fastplan``, ``fastheredoc``, ``fastquote``) must never change a verdict. Besides the
tables and generated commands of ``test_analysis_fastplan``, this runs every string
literal of the analysis, classification and red-team test modules (evasions,
here-documents, obfuscated names, wrapper tricks) and both benchmark corpora through
``analyze`` with and without the fast paths (``fast=False`` also parses every script string), and
compares the whole result.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

from benchmarks.bench_classify import CORPUS as BENCH_CORPUS
from benchmarks.scenarios.classification import CORPUS as SCENARIO_CORPUS
from shellrt.analysis.analyze import _analyze_bash
from shellrt.analysis.fastheredoc import plan_fast

_TESTS = Path(__file__).parent
_SOURCES = sorted(
    {
        *_TESTS.glob("test_analysis_*.py"),
        *_TESTS.glob("test_redteam*.py"),
        *_TESTS.glob("test_*classify*.py"),
        *_TESTS.glob("test_*heredoc*.py"),
    }
)


def _string_literals(path: Path) -> set[str]:
    """Every string constant in a test module (commands, evasions, and some prose, which is harmless)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }


@functools.cache
def _candidates() -> list[str]:
    """Read when a test of this file runs, once per process: at import (a module constant) every
    collecting process paid it, 2-3 s of CPU each, seven a CI run (round 52 suitetime2)."""
    found: set[str] = set(BENCH_CORPUS) | set(SCENARIO_CORPUS)
    for path in _SOURCES:
        found |= _string_literals(path)
    return sorted(command for command in found if 0 < len(command) <= 2000)


def test_the_corpus_is_real() -> None:
    """The sources exist and the fast path takes a real share of their commands (else this tests nothing)."""
    assert len(_SOURCES) >= 10
    candidates = _candidates()
    taken = [command for command in candidates if plan_fast(command) is not None]
    assert len(candidates) > 2000
    assert len(taken) > 500


@pytest.mark.parametrize("chunk", range(8))
def test_fast_and_full_paths_agree_on_every_test_string(chunk: int) -> None:
    mismatches = []
    for command in _candidates()[chunk::8]:
        # Every string: a command the parser plans may hold script strings the fast path plans.
        fast = _analyze_bash(command, fast=True).model_dump()
        full = _analyze_bash(command, fast=False).model_dump()
        if fast != full:
            mismatches.append(command)
    assert not mismatches, mismatches[:20]
