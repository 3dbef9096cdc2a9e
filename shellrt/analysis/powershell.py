"""PowerShell analysis (placeholder until the tokenizer lands): never read-only."""

from __future__ import annotations

from .models import CommandAnalysis

__all__ = ["analyze_powershell"]


def analyze_powershell(command: str) -> CommandAnalysis:
    """Not read-only until the PowerShell parser is implemented."""
    return CommandAnalysis.model_construct(
        command=command, shell="powershell", parse_ok=False, read_only=False, concurrency_safe=False,
        destructive=False, subcommands=[], reasons=["PowerShell analysis not available"], cd_targets=[],
        write_targets=[], writes_unknown=True, env={}, plan=None)
