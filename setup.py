"""Build hook: compile the command analyser with mypyc when possible, else ship it as pure Python.

``analyze()`` runs on every tool call, and its hot modules (the planner, the
judge and the program models) are plain typed Python that mypyc turns into C
extension modules about twice as fast (``benchmarks/bench_classify.py``). The
``.py`` files are shipped too: without a C compiler, without mypy, or with
``SHELLRT_PURE_PYTHON=1`` the same code runs interpreted, with identical verdicts
(CI runs the analysis tests both ways).

Everything else (metadata, dependencies, packages) is in ``pyproject.toml``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from setuptools import Distribution, setup
from setuptools.command.build_ext import build_ext

#: Modules compiled by mypyc (``tests/test_analysis_build.py`` reads this list and
#: checks that each one is loaded compiled). Pydantic models stay interpreted
#: (mypyc cannot compile classes with a metaclass).
COMPILED_MODULES = [
    "shellrt/analysis/nodes.py",
    "shellrt/analysis/parse.py",
    "shellrt/analysis/words.py",
    "shellrt/analysis/heredoc.py",
    "shellrt/analysis/plan.py",
    "shellrt/analysis/fastplan.py",
    "shellrt/analysis/fastheredoc.py",
    "shellrt/analysis/fastquote.py",
    "shellrt/analysis/judge.py",
    "shellrt/analysis/effects.py",
    "shellrt/analysis/parts.py",
    "shellrt/analysis/analyze.py",
    "shellrt/analysis/programs/__init__.py",
    "shellrt/analysis/programs/spec.py",
    "shellrt/analysis/programs/simple.py",
    "shellrt/analysis/programs/find.py",
    "shellrt/analysis/programs/git.py",
    "shellrt/analysis/programs/sed.py",
    "shellrt/analysis/programs/jq.py",
    "shellrt/analysis/programs/wrappers.py",
    "shellrt/analysis/programs/paths.py",
]


def _warn(message: str) -> None:
    print(f"shellrt setup: {message}", file=sys.stderr)


def _ext_modules() -> list[Any]:
    if os.environ.get("SHELLRT_PURE_PYTHON") == "1":
        _warn("SHELLRT_PURE_PYTHON=1: the analyser is installed as pure Python")
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        _warn("mypyc is not available: the analyser is installed as pure Python (pip install mypy to compile)")
        return []
    here = Path(__file__).resolve().parent
    old = Path.cwd()
    os.chdir(here)  # mypyc takes paths relative to the project
    try:
        programs = [m for m in COMPILED_MODULES if "/programs/" in m]
        rest = [m for m in COMPILED_MODULES if m not in programs]
        # The analyser imports nothing outside shellrt.analysis, but mypy follows the package's
        # lazy exports into the rest of shellrt, whose optional extras (mcp, httpx, docker) are
        # not in the build environment: type-check those silently (mypy --strict in CI covers them).
        options = ["--follow-imports=silent"]
        # Two shared libraries, built in parallel: one per module (separate=True) fails to import
        # (RecursionError in mypyc's cross-group loading), one for all is a single gcc run on one big file.
        groups = [(programs, "shellrt_programs"), (rest, "shellrt_analysis")]
        return list(mypycify([*options, *COMPILED_MODULES], opt_level="3", separate=groups))
    except (Exception, SystemExit) as exc:  # a mypyc failure must not make the package uninstallable
        _warn(f"mypyc failed ({exc}): the analyser is installed as pure Python")
        return []
    finally:
        os.chdir(old)


class OptionalBuildExt(build_ext):
    """Build the compiled analyser; on any failure, drop it and install pure Python.

    mypyc runs here, not at ``setup()`` time: the PEP 517 metadata hooks also run
    this file, and type-checking and generating C for each of them would triple
    the build. Editable installs stay interpreted (an edited ``.py`` must take
    effect; a stale ``.so`` next to it would shadow it) unless
    ``SHELLRT_COMPILE_EDITABLE=1``. The extension modules are all-or-nothing: a
    half-built set is removed, so an install never mixes a compiled module with
    an interpreted one it was built against.
    """

    def initialize_options(self) -> None:
        super().initialize_options()
        self.parallel = os.cpu_count() or 1

    def finalize_options(self) -> None:
        editable = bool(getattr(self, "editable_mode", False))
        if editable and os.environ.get("SHELLRT_COMPILE_EDITABLE") != "1":
            _warn("editable install: the analyser stays pure Python (SHELLRT_COMPILE_EDITABLE=1 compiles it)")
            self.distribution.ext_modules = []
        else:
            self.distribution.ext_modules = _ext_modules()
        super().finalize_options()

    def run(self) -> None:
        try:
            super().run()
        except (Exception, SystemExit) as exc:
            _warn(f"compiling the analyser failed ({exc}): it is installed as pure Python")
            for output in self.get_outputs():
                Path(output).unlink(missing_ok=True)
            self.extensions = []


class CompiledDistribution(Distribution):
    """Always a platform build, so ``build_ext`` runs and decides what to compile."""

    def has_ext_modules(self) -> bool:
        return os.environ.get("SHELLRT_PURE_PYTHON") != "1"


setup(cmdclass={"build_ext": OptionalBuildExt}, distclass=CompiledDistribution)
