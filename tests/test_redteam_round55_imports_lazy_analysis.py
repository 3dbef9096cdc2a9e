"""The command analysis package re-exports lazily, and ``analyze`` stays the function (round 55).

Why: ``shellrt.analysis.__init__`` imported ``analyze`` (tree-sitter, every program's option
model) and ``judge`` eagerly, so a caller of one light submodule (``kernel_paths``: the hooks'
environment check, which ``shellrt permissions list`` loads) paid for the whole analysis. Lazily,
the package must still hand every caller the same objects: above all ``analyze`` the function,
also after the import system bound the submodule of the same name on the package.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _python(code: str) -> str:
    """Run ``code`` in a fresh interpreter on this checkout; its standard output."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=60
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip()


def test_a_light_submodule_does_not_load_the_analysis() -> None:
    out = _python(
        "import sys, shellrt.analysis.kernel_paths, shellrt.analysis.git_env\n"
        "print(sorted(m for m in ('shellrt.analysis.analyze', 'shellrt.analysis.judge', "
        "'shellrt.analysis.models', 'tree_sitter') if m in sys.modules))"
    )
    assert out == "[]"


def test_analyze_is_the_function_whichever_loads_first() -> None:
    out = _python(
        "import sys, types\n"
        "import shellrt.analysis.analyze\n"  # the submodule first: the import system binds it
        "import shellrt.analysis as package\n"
        "from shellrt.analysis import analyze\n"
        "module = sys.modules['shellrt.analysis.analyze']\n"
        # not FunctionType: a compiled (mypyc) build's function is a builtin (CI151 failed on that)
        "print(package.analyze is module.analyze and not isinstance(package.analyze, types.ModuleType), "
        "analyze is module.analyze, "
        "analyze('ls -la').read_only, analyze('rm -rf x').read_only)"
    )
    assert out == "True True True False"


def test_every_exported_name_resolves_to_its_defining_module() -> None:
    out = _python(
        "import importlib, shellrt.analysis as package\n"
        "bad = [n for n, m in package._LAZY.items()\n"
        "       if getattr(package, n) is not getattr(importlib.import_module('shellrt.analysis.' + m), n)]\n"
        "missing = sorted(set(package.__all__) - set(package._LAZY))\n"
        "print(bad, missing)"
    )
    assert out == "[] []"


def test_an_unknown_name_is_still_an_attribute_error() -> None:
    out = _python(
        "import shellrt.analysis as package\n"
        "try:\n    package.no_such_name\nexcept AttributeError as exc:\n    print('AttributeError', exc)"
    )
    assert out == "AttributeError module 'shellrt.analysis' has no attribute 'no_such_name'"
