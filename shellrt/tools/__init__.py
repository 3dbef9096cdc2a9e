"""Built-in tools: thin adapters on the Tool protocol (Bash, files, web, tasks)."""

from __future__ import annotations

__all__: list[str] = []
