"""The lazily loaded packages (PEP 562): the name→module table, ``__all__`` and what resolves agree.

``__all__`` stays a literal list (mypy and ruff read it); the table beside it says where each
name lives. A name added to one and not the other would fail only on first use.
"""

from __future__ import annotations

import importlib

import pytest


@pytest.mark.parametrize("name", ["sandbox", "shellrt.supervisor"])
def test_every_exported_name_has_a_home_and_resolves(name: str) -> None:
    package = importlib.import_module(name)
    table: dict[str, str] = package._HOME
    assert set(table) <= set(package.__all__), set(table) - set(package.__all__)
    for export in package.__all__:
        value = getattr(package, export)
        if export in table:
            home = table[export] if table[export].startswith(name) else f"{name}.{table[export]}"
            assert value is getattr(importlib.import_module(home), export)
