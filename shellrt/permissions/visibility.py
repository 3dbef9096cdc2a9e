"""Which tools the model may see: a tool denied outright by a rule is left out of ``tools[]``.

Why: offering a tool that every call of would be denied wastes the model's
context and invites retries. Only tool-wide deny rules hide a tool (a
content rule like ``Bash(rm:*)`` does not). The order of the remaining tools
is the input order, so ``tools[]`` — and the prompt cache — stays stable.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from shellrt.permissions.interfaces import PermissionGate
from shellrt.protocol import Tool

__all__ = ["visible_tools"]

T = TypeVar("T", bound=Tool[Any, Any])


def visible_tools(tools: Sequence[T], gate: PermissionGate) -> list[T]:
    """``tools`` without those the gate hides, in the same order."""
    return [tool for tool in tools if gate.is_visible(tool)]
