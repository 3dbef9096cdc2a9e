"""Red team round 7 (interfaces): an MCP tool's schema patterns never run on the model's input.

An MCP proxy tool checks the model's arguments against the server's JSON Schema before the call
(in the scheduler and the executor: inside the event loop). A ``pattern`` in that schema is a
Python regex run by ``jsonschema`` on a string the model wrote: with an innocent-looking
backtracking pattern (``^([a-z0-9]+[-.]?)+@…``, common for e-mail fields) 40 characters held the
event loop for minutes — every session of a ``serve`` process stopped. Each check runs here in
its own process, so a hang is measured, not suffered.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import mcp.types as mt
import pytest

from shellrt.tools.mcp.proxy import McpProxyTool

_PROBE = """
import json, sys, time
import mcp.types as mt
from shellrt.tools.mcp.proxy import McpProxyTool
schema, raw = json.loads(sys.argv[1]), json.loads(sys.argv[2])
tool = McpProxyTool("s", mt.Tool(name="t", input_schema=schema), None, always_load=True)
started = time.monotonic()
try:
    tool.parse_input(raw)
    verdict = "valid"
except Exception as exc:
    verdict = type(exc).__name__
print(json.dumps({"verdict": verdict, "elapsed": time.monotonic() - started}))
"""

EVIL = "^([a-z0-9]+[-.]?)+@example\\.com$"
HOSTILE = "a" * 40 + "!"


def _probe(schema: dict[str, object], raw: dict[str, object]) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    try:
        done = subprocess.run(
            [sys.executable, "-c", _PROBE, json.dumps(schema), json.dumps(raw)],
            capture_output=True,
            text=True,
            timeout=20,
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("checking the model's input against the schema ran past 20 s")
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"email": {"type": "string", "pattern": EVIL}}},
        {"type": "object", "propertyNames": {"pattern": EVIL}},
        {"type": "object", "patternProperties": {EVIL: {"type": "string"}}},
        {
            "type": "object",
            "properties": {"a": {"type": "array", "items": {"type": "string", "pattern": EVIL}}},
        },
    ],
)
def test_a_schema_pattern_never_runs_on_the_models_input(schema: dict[str, object]) -> None:
    raw: dict[str, object] = {"email": HOSTILE, HOSTILE: "x", "a": [HOSTILE]}
    result = _probe(schema, raw)
    assert result["verdict"] == "valid", result  # the server judges its own patterns


def test_schemas_without_patterns_are_still_checked_here() -> None:
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"],
        "additionalProperties": False,
    }
    tool = McpProxyTool("s", mt.Tool(name="t", input_schema=schema), None, always_load=True)  # type: ignore[arg-type]
    tool.parse_input({"n": 1})
    with pytest.raises(ValueError, match="is not of type 'integer'"):
        tool.parse_input({"n": "one"})
    with pytest.raises(ValueError, match="Additional properties"):
        tool.parse_input({"n": 1, "x": 2})
