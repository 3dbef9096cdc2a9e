"""The MCP wires' strict JSON reader (`shellrt.permissions.strict_json`, shared with hooks)."""

from __future__ import annotations

from shellrt.permissions.strict_json import StrictJsonError, strict_loads

__all__ = ["StrictJsonError", "strict_loads"]
