"""Red team round 36 (review4): an input schema whose check never ends, in the event loop.

Round 36 mcp made a checker *failure* (RecursionError, Unresolvable) leave the input to the server,
and round 29 skipped regex keywords (backtracking in the loop). But a 2 KB schema of nested
``anyOf`` through ``$defs`` (each level two refs to the next) costs 2^depth checks on an input that
fails at the leaf: depth 14 took 2 s, depth 30 would take days, in ``parse_input`` on the event
loop, so one hostile server's tool stalled every session of the process when the model called it.
A schema whose expansion (``$ref`` followed) passes a fixed budget is left to the server to judge.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import mcp.types as mt
import pytest

from shellrt.tools.mcp.proxy import McpProxyTool

PROBE = r"""
import sys, mcp.types as mt
from shellrt.tools.mcp.proxy import McpProxyTool
d = int(sys.argv[1])
key = sys.argv[2]
defs = {f"a{i}": {key: [{"$ref": f"#/$defs/a{i+1}"}, {"$ref": f"#/$defs/a{i+1}"}]} for i in range(d)}
defs[f"a{d}"] = {"type": "string"}
schema = {"type": "object", "properties": {"x": {"$ref": "#/$defs/a0"}}, "$defs": defs}
tool = McpProxyTool("srv", mt.Tool(name="t", inputSchema=schema), None, always_load=False)
tool.parse_input({"x": 1})
print("DONE")
"""


@pytest.mark.parametrize("key", ["anyOf", "oneOf", "allOf"])
def test_a_schema_exponential_to_check_does_not_stall_the_loop(key: str) -> None:
    started = time.monotonic()
    try:
        out = subprocess.run(
            [sys.executable, "-c", PROBE, "40", key], capture_output=True, text=True, timeout=20,
            env={**os.environ, "PYTHONPATH": os.getcwd()},
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail(f"checking the input against a 40-level {key} schema ran past 20 s (event loop stalled)")
    assert "DONE" in out.stdout, out.stderr[-2000:]
    assert time.monotonic() - started < 20


def test_an_ordinary_schema_is_still_checked_here() -> None:
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer"}, "tags": {"type": "array", "items": {"$ref": "#/$defs/tag"}}},
        "required": ["n"],
        "$defs": {"tag": {"anyOf": [{"type": "string"}, {"type": "integer"}]}},
    }
    tool = McpProxyTool("srv", mt.Tool(name="t", inputSchema=schema), None, always_load=False)  # type: ignore[arg-type]
    tool.parse_input({"n": 1, "tags": ["a", 2]})
    with pytest.raises(Exception, match="integer"):
        tool.parse_input({"n": "x"})
