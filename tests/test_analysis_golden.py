"""Golden outputs: ``analyze()`` must give the recorded result for thousands of commands.

``analysis_golden.json`` holds commands (the verdict tables' strings, the benchmark
corpus and seeded random compositions of tricky words, redirections and operators)
with a hash of each full ``model_dump()`` (plan, verdict, reasons, subcommands, ...).
It was recorded when the parser-free fast path was added, so speed-ups cannot
change any output unnoticed. After an intended change of output, re-record with
``python -m tests.test_analysis_golden --write`` and explain the change in the commit.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from shellrt.analysis.analyze import _analyze_bash

GOLDEN = Path(__file__).with_name("analysis_golden.json")


def _canonical(value: Any) -> Any:
    if isinstance(value, (set, frozenset)):
        return sorted(_canonical(v) for v in value)
    if isinstance(value, dict):
        return {k: _canonical(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    return value


def digest(command: str, fast: bool = True) -> str:
    dumped = json.dumps(_canonical(_analyze_bash(command, fast).model_dump()), sort_keys=True)
    return hashlib.sha256(dumped.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _load() -> dict[str, str]:
    data: dict[str, str] = json.loads(GOLDEN.read_text(encoding="utf-8"))
    return data


def test_outputs_match_the_recording() -> None:
    golden = _load()
    assert len(golden) > 5000
    changed = [command for command, expected in golden.items() if digest(command) != expected]
    assert not changed, f"{len(changed)} outputs changed, e.g. {changed[:5]!r}"


def test_parser_path_matches_the_recording_too() -> None:
    golden = _load()
    changed = [
        command for command, expected in list(golden.items())[::7] if digest(command, fast=False) != expected
    ]
    assert not changed, changed[:5]


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    commands = list(_load())
    GOLDEN.write_text(
        json.dumps({c: digest(c) for c in commands}, indent=0, ensure_ascii=True) + "\n", encoding="utf-8"
    )
