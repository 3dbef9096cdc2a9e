"""What a tool's own semantics say about it, without knowing the input.

MCP annotations (``readOnlyHint`` …) and ``shellrt tools`` describe a tool
before any call exists, while our tools answer per input (Bash is read-only
for ``git status``, not for ``rm``). So each property is evaluated on a
*typical* input — the model's defaults when they validate — and reported as
``True``/``False``, or ``"depends on input"`` when the tool decides per call.
Hints derived from this must stay truthful: "depends" never becomes
``readOnlyHint: true``.

This module imports no SDK, so the CLI can use it where ``mcp`` is not installed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel

from shellrt.protocol import Tool

__all__ = ["DEPENDS", "ToolSemantics", "Tri", "semantics_of"]

DEPENDS: Literal["depends on input"] = "depends on input"
Tri = bool | Literal["depends on input"]


@dataclass(frozen=True)
class ToolSemantics:
    """A tool's classification, for MCP annotations and ``shellrt tools``."""

    name: str
    read_only: Tri
    concurrency_safe: Tri
    destructive: Tri
    open_world: Tri
    idempotent: bool
    deferred: bool
    always_load: bool
    touches_environment: bool

    @property
    def permission(self) -> str:
        """What a call needs, in one phrase (before rules and modes apply)."""
        if self.read_only is True:
            return "none (read-only)"
        if not self.touches_environment:
            return "none (session state only)"
        if self.read_only == DEPENDS:
            return "read-only calls run freely; others need an allow rule or approval"
        return "allow rule or approval"

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "read_only": self.read_only,
            "concurrency_safe": self.concurrency_safe,
            "destructive": self.destructive,
            "open_world": self.open_world,
            "idempotent": self.idempotent,
            "deferred": self.deferred and not self.always_load,
            "permission": self.permission,
        }


def _typical_input(tool: Tool[Any, Any]) -> BaseModel:
    """The defaults when they validate; else an unvalidated instance missing the required fields.

    A method that answers without looking at the input (Read: always read-only)
    works on either; one that reads a required field (Bash: the command) raises,
    which is exactly "depends on input".
    """
    try:
        return tool.input_model.model_validate({})
    except Exception:
        return tool.input_model.model_construct()


def _evaluate(tool: Tool[Any, Any], method: str, sample: BaseModel) -> Tri:
    try:
        value = bool(getattr(tool, method)(sample))
    except Exception:
        return DEPENDS
    return value


def semantics_of(tool: Tool[Any, Any]) -> ToolSemantics:
    """Classify ``tool`` on a typical input (see the module docstring)."""
    sample = _typical_input(tool)
    read_only = _evaluate(tool, "is_read_only", sample)
    if read_only is True:
        concurrency: Tri = _evaluate(tool, "is_concurrency_safe", sample)
        destructive: Tri = False
    else:
        concurrency = _evaluate(tool, "is_concurrency_safe", sample)
        destructive = _evaluate(tool, "is_destructive", sample)
    return ToolSemantics(
        name=tool.name,
        read_only=read_only,
        concurrency_safe=concurrency,
        destructive=destructive,
        open_world=_evaluate(tool, "is_open_world", sample),
        idempotent=bool(getattr(tool, "idempotent", False)),
        deferred=bool(tool.defer_loading),
        always_load=bool(tool.always_load),
        touches_environment=bool(getattr(type(tool), "touches_environment", True)),
    )
