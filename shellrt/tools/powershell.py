"""The PowerShell tool: the Bash tool's machinery with ``pwsh -NoProfile -NonInteractive -Command``.

When ``pwsh`` is not installed, validation fails with a message naming the fix
(and pointing the model at Bash), instead of a cryptic "command not found".
"""

from __future__ import annotations

import shutil

from shellrt.permissions.interfaces import CommandPart
from shellrt.protocol import ToolContext, ValidationResult
from shellrt.supervisor import Supervisor
from shellrt.supervisor.shells import PWSH_MISSING
from shellrt.tools._pwshparts import powershell_parts
from shellrt.tools.bash import BashInput, ShellTool

__all__ = ["PowerShell"]


class PowerShell(ShellTool):
    """Run a PowerShell 7 command in the session's sandbox."""

    name = "PowerShell"
    shell = "powershell"
    search_hint = "powershell pwsh windows cmdlet"

    def prompt(self) -> str:
        return (
            "Run a PowerShell 7 (pwsh) command in the workspace sandbox, non-interactively and without "
            "profiles. Same rules as Bash: fresh process per call, the working directory carries over, "
            "`timeout` in milliseconds (default 120000, max 600000), `run_in_background` for long tasks."
        )

    async def validate(self, tool_input: BashInput, ctx: ToolContext) -> ValidationResult:
        base = await super().validate(tool_input, ctx)
        if not base.ok:
            return base
        host_like = not ctx.has_service(Supervisor) or ctx.service(Supervisor).backend.host_view
        if host_like and shutil.which("pwsh") is None:
            return ValidationResult.failure(PWSH_MISSING)
        return ValidationResult.success()

    def command_parts(self, tool_input: BashInput, ctx: ToolContext) -> list[CommandPart] | None:
        """Parts named by canonical cmdlet, with unknown reads (see `shellrt.tools._pwshparts`);
        None when the command could not be parsed (no rule can then be checked against it)."""
        a = self.analysis(tool_input)
        if a is None or not a.parse_ok:
            return None
        return powershell_parts(a)
