"""shellrt: a sandboxed shell execution subsystem for AI agents.

``shellrt.Runtime`` is the Python API (imported lazily so the CLI starts fast).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from shellrt.runtime import Runtime

__all__ = ["Runtime"]


def __getattr__(name: str) -> Any:
    if name == "Runtime":
        from shellrt.runtime import Runtime

        return Runtime
    raise AttributeError(f"module 'shellrt' has no attribute {name!r}")
