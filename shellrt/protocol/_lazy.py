"""Lazy package exports: a package ``__init__`` names what it re-exports without importing it.

Lives in the lowest shellrt layer so every package may use it. Why: ``import shellrt.runtime.sandbox_policy`` (``shellrt run`` needs it) first runs
``shellrt/runtime/__init__.py``; when that re-exports eagerly, a one-line
helper pulls in the whole runtime, every tool and the command analysis. With
`lazy_exports`, ``from shellrt.runtime import Runtime`` still works (PEP 562
module ``__getattr__``) and imports only the module that defines ``Runtime``.
The package keeps the same names under ``TYPE_CHECKING`` for type checkers.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping

__all__ = ["lazy_exports"]


def lazy_exports(package: str, exports: Mapping[str, str]) -> Callable[[str], object]:
    """A module ``__getattr__`` resolving each name of ``exports`` (name -> defining module) on first use."""

    def __getattr__(name: str) -> object:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        package_module = importlib.import_module(package)
        setattr(package_module, name, value)  # later look-ups skip this function
        return value

    return __getattr__
