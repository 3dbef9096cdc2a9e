"""Which analysis modules run compiled (mypyc, see ``setup.py``), and the one fix-up that needs.

``pip install .`` compiles the hot modules of this package with mypyc; without a C
compiler, in an editable install or with ``SHELLRT_PURE_PYTHON=1`` the same ``.py``
files run interpreted. Verdicts are identical either way (CI runs the analysis
tests in both builds); only speed differs.

mypyc turns the plan's dataclasses (``nodes``) into native classes and, doing so,
replaces their field annotations with erased runtime classes (``str | None``
becomes ``type``, ``list[Word]`` becomes ``list``). Pydantic reads those annotations
to validate and serialise the plan inside ``CommandAnalysis``, so
:func:`restore_annotations` puts back the source annotations, read from the
``.py`` file that is shipped next to the extension module (and declares
``__slots__``, which pydantic checks to set fields one by one: native instances
have no ``__dict__``).
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import importlib.machinery
import sys
import warnings
from pathlib import Path
from types import ModuleType

__all__ = [
    "REBUILD_ADVICE", "build_description", "compiled_modules", "is_compiled", "restore_annotations", "stale_modules",
    "warn_if_stale",
]

_PACKAGE = __name__.rpartition(".")[0]
_EXTENSION_SUFFIXES = tuple(importlib.machinery.EXTENSION_SUFFIXES)
#: What to do about stale in-place extension modules (the import warning and the test suite say it).
REBUILD_ADVICE = (
    "Rebuild them (python3 setup.py build_ext --inplace --force) or delete them "
    "(find shellrt -name '*.so' -delete; rm -f shellrt_*__mypyc*.so)."
)


def _is_extension(module: ModuleType) -> bool:
    return str(getattr(module, "__file__", "") or "").endswith(_EXTENSION_SUFFIXES)


def compiled_modules() -> list[str]:
    """Names of the loaded ``shellrt.analysis`` modules that are compiled extension modules."""
    return sorted(
        name for name, module in list(sys.modules.items())
        if (name == _PACKAGE or name.startswith(_PACKAGE + ".")) and module is not None and _is_extension(module)
    )


def is_compiled() -> bool:
    """True when ``analyze()`` itself runs compiled (the build benchmarks report)."""
    return _is_extension(importlib.import_module(f"{_PACKAGE}.analyze"))


def build_description() -> str:
    """One line for benchmark output: which build of the analyser is measured."""
    if is_compiled():
        return f"compiled with mypyc ({len(compiled_modules())} modules)"
    return "pure Python (an editable install, no C compiler, or SHELLRT_PURE_PYTHON=1 at install)"


def _source_of(module: ModuleType) -> Path:
    extension = Path(str(module.__file__))
    return extension.with_name(module.__name__.rpartition(".")[2] + ".py")


def stale_modules() -> list[str]:
    """Compiled modules whose ``.py`` source is newer than the extension built from it.

    An in-place build (``python setup.py build_ext --inplace --force``) leaves
    extension modules in the source tree, and they shadow the ``.py`` files: an
    edit made after the build would silently not run. The test suite refuses to
    start then. (Without ``--force`` an incremental build re-copies unchanged
    extension modules with their old times, and they look stale.)
    """
    stale = []
    for name in compiled_modules():
        module = sys.modules[name]
        source = _source_of(module)
        if source.exists() and source.stat().st_mtime > Path(str(module.__file__)).stat().st_mtime:
            stale.append(name)
    return stale


def warn_if_stale() -> None:
    """In a source checkout (``setup.py`` beside the package), warn about stale extension modules.

    Installed wheels are skipped: they ship no setup.py, and the times of their
    files say nothing about which one was built from which.
    """
    if not (Path(__file__).resolve().parents[2] / "setup.py").is_file():
        return
    stale = stale_modules()
    if stale:
        warnings.warn(
            f"compiled shellrt analysis modules are older than their sources and shadow them: {', '.join(stale)}. "
            + REBUILD_ADVICE,
            RuntimeWarning,
            stacklevel=2,
        )


def restore_annotations(module: ModuleType) -> None:
    """Give the dataclasses of a compiled ``module`` their source annotations back (no-op when interpreted)."""
    if not _is_extension(module):
        return
    source = _source_of(module)
    try:
        tree = ast.parse(source.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ImportError(
            f"{module.__name__} is compiled but its source {source} is missing; pydantic needs its annotations. "
            "Reinstall shellrt, or install it with SHELLRT_PURE_PYTHON=1 to skip compiling."
        ) from exc
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        cls = getattr(module, node.name, None)
        if not isinstance(cls, type) or not dataclasses.is_dataclass(cls):
            continue
        annotations = {
            stmt.target.id: ast.unparse(stmt.annotation)
            for stmt in node.body
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
        }
        cls.__annotations__ = annotations
        for field in dataclasses.fields(cls):
            field.type = annotations[field.name]
        # Native instances have no __dict__; pydantic looks for __slots__ to set fields one by one.
        if not hasattr(cls, "__slots__"):
            setattr(cls, "__slots__", tuple(f.name for f in dataclasses.fields(cls)))  # noqa: B010
