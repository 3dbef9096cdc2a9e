"""The argv that runs a command in a fresh shell and reports its final cwd.

Bash: the command text follows an ``EXIT`` trap that writes ``pwd -P`` to
``$SHELLRT_CWD_FILE`` when ``$PWD`` moved from where the shell started (a
command that did not ``cd`` writes nothing, and no report means "unchanged");
the trap does not call ``exit``, so the shell keeps the command's exit status
(or its signal death).
The command is appended as text (not ``eval``'d) so its line numbers, ``$0``
and syntax errors read as usual; ``exec`` or a SIGKILL skips the trap, which
simply leaves the cwd unchanged. A command whose cwd nobody reads (``report_cwd``
false: the analysis proved it cannot leave its directory, or the caller does not
track it) gets an empty ``EXIT`` trap instead (~12% fewer instructions for bash
than the reporting one): a trap still, because without any bash execs the last
program of the text in its own place, and ``ps`` would no longer show the shell
and the command text (operators, and tests, find a command by them).

PowerShell: ``pwsh -NoProfile -NonInteractive -Command`` with the command in a
``try``/``finally`` that writes the provider path of the location.
"""

from __future__ import annotations

import shutil
from typing import Literal

from shellrt.supervisor.errors import ShellUnavailableError

__all__ = ["Shell", "shell_argv"]

Shell = Literal["bash", "powershell"]

_BASH_PRELUDE = (
    '__shellrt_d=$PWD; trap \'[ "$PWD" = "$__shellrt_d" ] || '
    '{ [ -n "${SHELLRT_CWD_FILE:-}" ] && pwd -P 2>/dev/null >"$SHELLRT_CWD_FILE"; }\' EXIT; '
)
#: No report: a trap that does nothing (it keeps bash from exec'ing the command's last program).
_BASH_PRELUDE_NO_REPORT = "trap : EXIT; "

_PWSH_TEMPLATE = """$ErrorActionPreference = 'Continue'
try {{
{command}
}} finally {{
  if ($env:SHELLRT_CWD_FILE) {{
    try {{ [IO.File]::WriteAllText($env:SHELLRT_CWD_FILE, (Get-Location).ProviderPath) }} catch {{ }}
  }}
}}
if ($LASTEXITCODE -ne $null -and $LASTEXITCODE -ne 0) {{ exit $LASTEXITCODE }}
if (-not $?) {{ exit 1 }}
"""

PWSH_MISSING = (
    "PowerShell is not available: `pwsh` (PowerShell 7+) is not installed in this sandbox. "
    "Use the Bash tool instead, or install PowerShell "
    "(https://learn.microsoft.com/powershell/scripting/install/installing-powershell-on-linux)."
)


def shell_argv(
    command: str,
    shell: Shell,
    *,
    check_host: bool = True,
    posix_shell: str = "bash",
    report_cwd: bool = True,
) -> tuple[str, ...]:
    """argv for ``command`` under ``shell``; raises `ShellUnavailableError` when pwsh is missing.

    ``check_host``: look the interpreter up on the host PATH (true for local and
    bwrap, whose processes see the host's binaries). ``posix_shell`` runs the
    "bash" shell where the sandbox has no bash (the prelude is POSIX sh).
    ``report_cwd=False``: an empty trap instead of the cwd report (nobody reads it).
    """
    if shell == "bash":
        return (
            posix_shell,
            "-c",
            (_BASH_PRELUDE if report_cwd else _BASH_PRELUDE_NO_REPORT) + command + "\n",
        )
    if shell == "powershell":
        if check_host and shutil.which("pwsh") is None:
            raise ShellUnavailableError(PWSH_MISSING)
        return ("pwsh", "-NoProfile", "-NonInteractive", "-Command", _PWSH_TEMPLATE.format(command=command))
    raise ValueError(f"unknown shell {shell!r}")
