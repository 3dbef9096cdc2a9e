"""shellrt: a sandboxed shell execution subsystem for AI agents."""

from __future__ import annotations

__all__: list[str] = []
