"""A repository's Python source is parsed without ever stopping shellrt (CI, stop 66).

CI146 failed once in `test_tool_list_stability`: a Runtime's start read an MCP server's hook files in a
worker thread beside others, and CPython 3.11.7's ``ast.parse`` raised ``SystemError: AST constructor
recursion depth mismatch`` (gh-106905: the converter's depth is per interpreter, not per thread), which
ended the start. A hostile script's shape stopped it as well: ``x=------…1`` (MemoryError) and
``f(a)(a)…`` (RecursionError) escaped `python_loads`. `shellrt.permissions.python_source.parse_python`
parses one at a time and turns each into "cannot be parsed" (the workspace is recorded whole).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from shellrt.permissions.hook_loads_python import python_loads
from shellrt.permissions.python_source import UnparsableSource, parse_python

ROOT = Path(__file__).resolve().parents[1]

_HOSTILE = {
    "unary-run": b"x=" + b"-" * 200_000 + b"1",  # MemoryError before
    "call-chain": b"f" + b"(a)" * 100_000,  # RecursionError before
    "parens": b"x=" + b"(" * 250 + b")" * 250,  # SyntaxError: as before
}


@pytest.mark.parametrize("name", sorted(_HOSTILE))
def test_a_hostile_shape_is_cannot_be_parsed(name: str, tmp_path: Path) -> None:
    """Failed before: 2 of 3 (unary-run, call-chain) raised out of `python_loads`."""
    loads = python_loads(tmp_path, "hook.py", _HOSTILE[name])
    assert loads.unbounded == ["hook script hook.py cannot be parsed as Python"]
    with pytest.raises(UnparsableSource):
        parse_python(_HOSTILE[name])


_RACE = r"""
import ast, gc, sys, threading, time
sys.path.insert(0, sys.argv[2])
from shellrt.permissions.python_source import parse_python
src = "\n".join(f"def f{i}(a, b=[1, {{2: 3}}]):\n    return [x for x in (a, b) if x]" for i in range(300))
gc.callbacks.append(lambda phase, info: sum(range(50)))  # Python code inside the gc: a GIL hand-over
gc.set_threshold(10, 1, 1)
sys.setswitchinterval(1e-6)
errors = []
def work():
    end = time.monotonic() + float(sys.argv[1])
    while time.monotonic() < end:
        try:
            parse_python(src)
        except SystemError as exc:
            errors.append(str(exc))
threads = [threading.Thread(target=work) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join()
print(len(errors), errors[:1])
"""


def test_parses_in_many_threads_never_raise_system_error() -> None:
    """Eight threads parsing for 3 s with a Python gc callback: with ``ast.parse`` itself the same child
    saw about one SystemError in 3 s on 3.11.7 here (not asserted: a fixed CPython sees none); with
    `parse_python`, none."""
    done = subprocess.run(
        [sys.executable, "-c", _RACE, "3", str(ROOT)], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.startswith("0 "), done.stdout + done.stderr
