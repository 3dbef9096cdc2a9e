"""The analyser build under test is the one CI asked for (compiled with mypyc, or pure Python).

``scripts/test.sh`` runs the suite on an in-place mypyc build with
``SHELLRT_EXPECT_COMPILED=1`` and the analysis tests again on the pure-Python
sources with ``SHELLRT_EXPECT_COMPILED=0``: if compiling silently fell back to
pure Python (setup.py never fails an install), this test says so.
"""

from __future__ import annotations

import ast
import dataclasses
import os
from pathlib import Path

from shellrt.analysis import analyze
from shellrt.analysis.compiled import compiled_modules, is_compiled, stale_modules
from shellrt.analysis.models import CommandAnalysis
from shellrt.analysis.nodes import CommandPlan, PlanCommand, Word
from tests.conftest import require

_EXPECT = os.environ.get("SHELLRT_EXPECT_COMPILED")



def _setup_compiled_modules() -> list[str]:
    """Module names from setup.py's COMPILED_MODULES (read, not copied, so they cannot drift apart)."""
    tree = ast.parse((Path(__file__).resolve().parents[1] / "setup.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "COMPILED_MODULES":
            paths: list[str] = ast.literal_eval(node.value)
            return [p.removesuffix(".py").removesuffix("/__init__").replace("/", ".") for p in paths]
    raise AssertionError("setup.py has no COMPILED_MODULES list")


def test_build_is_the_expected_one() -> None:
    require(_EXPECT is not None, "SHELLRT_EXPECT_COMPILED not set (scripts/test.sh sets it)")
    if _EXPECT == "1":
        assert is_compiled(), "the analyser should be compiled (python3 setup.py build_ext --inplace failed?)"
        loaded = set(compiled_modules())
        expected = _setup_compiled_modules()
        assert len(expected) >= 10
        missing = [m for m in expected if m not in loaded]
        assert not missing, f"not compiled: {missing}"
    else:
        assert not is_compiled()
        assert compiled_modules() == []


def test_no_stale_extension_modules() -> None:
    assert stale_modules() == []


def test_plan_round_trips_through_pydantic_in_either_build() -> None:
    """Compiled node classes lose their annotations; compiled.restore_annotations puts them back."""
    result = analyze("git log --oneline | head -5 > /tmp/x 2>&1")
    assert result.plan is not None
    again = CommandAnalysis.model_validate(result.model_dump())
    assert again == result
    assert isinstance(again.plan, CommandPlan)
    assert isinstance(again.plan.commands[0], PlanCommand)
    assert isinstance(again.plan.commands[0].argv[0], Word)
    types = {f.name: f.type for f in dataclasses.fields(Word)}
    assert types == {"raw": "str", "value": "str | None", "features": "frozenset[str]"}
    schema = CommandAnalysis.model_json_schema()
    word = schema["$defs"]["Word"]["properties"]
    assert word["value"]["anyOf"] == [{"type": "string"}, {"type": "null"}]
