"""The argv that runs a command in a fresh shell and reports its final cwd.

Bash: the command text follows an ``EXIT`` trap that writes ``pwd -P`` (and a final ``/``) to
``$SHELLRT_CWD_FILE`` when ``$PWD`` moved from where the shell started (a
command that did not ``cd`` writes nothing, and no report means "unchanged");
the trap does not call ``exit``, so the shell keeps the command's exit status
(or its signal death).
With ``text_in_argv`` (`shell_argv`) the command is appended as text; by default
(`shell_launch`) it is ``eval``'d from the environment (below). ``exec`` or a SIGKILL skips the trap, which
simply leaves the cwd unchanged. A command whose cwd nobody reads (``report_cwd``
false: the analysis proved it cannot leave its directory, or the caller does not
track it) gets an empty ``EXIT`` trap instead (~12% fewer instructions for bash
than the reporting one): a trap still, because without any bash execs the last
program of the text in its own place, and ``ps`` would no longer show the shell
(operators, and tests, find a command by it; its owner reads the text in its environment).

Hidden text (`shell_launch`, the default): ``/proc/<pid>/cmdline`` is readable by every
local user, and a command may carry a secret (``curl -H 'Authorization: ...'``). So the
text travels in the environment (`COMMAND_VAR`; ``/proc/<pid>/environ`` is readable only by
the same uid), and a fixed argv takes it out, unsets the variable (the command's children do
not inherit it) and ``eval``s it. ``eval`` parses and runs as ``-c`` does: ``$0``, line
numbers, exit codes, ``set -e``, here-documents and traps are the same; a syntax error reads
``bash: eval: line N: ...`` instead of ``bash: -c: line N: ...`` (same status 2), and
``$BASH_EXECUTION_STRING`` is the fixed argv. Every backend carries the environment out of
sight already (bwrap: a memfd; docker: the request file; the zygote: its socket).

PowerShell: ``pwsh -NoProfile -NonInteractive -Command`` with the command in a
``try``/``finally`` that moves the process to the location and writes the process's cwd (text in
argv: not hidden). ``Set-Location`` moves PowerShell's location only, and docker reports a cwd only
when the kernel's at the command's exit says the same (red team round 27), so a pwsh ``cd`` was
never reported there; the process now ends where its location is (a location that is no
directory, ``Env:``: nothing reported).
"""

from __future__ import annotations

import shutil
from typing import Literal, NamedTuple

from shellrt.supervisor.errors import ShellUnavailableError

__all__ = ["COMMAND_VAR", "REPORT_END", "Shell", "ShellLaunch", "shell_argv", "shell_launch"]

Shell = Literal["bash", "powershell"]

#: The report is ``pwd -P``'s line and then ``/`` (`REPORT_END`): a name may end in CR or LF, which
#: a reader trimming the line would lose (red team, round 27: ``cd build$'\\r'`` moved the session
#: to ``build``). Builtins in a group: no fork (the reader trims the last line end).
_BASH_PRELUDE = (
    '__shellrt_d=$PWD; trap \'[ "$PWD" = "$__shellrt_d" ] || '
    '{ [ -n "${SHELLRT_CWD_FILE:-}" ] && { pwd -P && echo /; } 2>/dev/null >"$SHELLRT_CWD_FILE"; }\' EXIT; '
)
#: How a bash report ends (`CwdTracker.adopt` takes it off; no ``pwd -P`` output ends so).
REPORT_END = "\n/"
#: No report: a trap that does nothing (it keeps bash from exec'ing the command's last program).
_BASH_PRELUDE_NO_REPORT = "trap : EXIT; "

#: The environment variable that carries a command's text to its shell (see the module doc).
COMMAND_VAR = "SHELLRT_COMMAND"
#: Takes the text out of the environment (fails closed when it did not arrive) and runs it.
_BASH_FROM_ENV = (
    f"__shellrt_c=${{{COMMAND_VAR}?shellrt: the command text did not reach the shell}}; "
    f'unset {COMMAND_VAR}; eval "$__shellrt_c"'
)


class ShellLaunch(NamedTuple):
    """What starts a command: its argv and the variables to add to its environment."""

    argv: tuple[str, ...]
    env: dict[str, str]


_PWSH_TEMPLATE = """$ErrorActionPreference = 'Continue'
try {{
{command}
}} finally {{
  if ($env:SHELLRT_CWD_FILE) {{
    try {{
      [Environment]::CurrentDirectory = (Get-Location).ProviderPath
      [IO.File]::WriteAllText($env:SHELLRT_CWD_FILE, [Environment]::CurrentDirectory)
    }} catch {{ }}
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


def shell_launch(
    command: str,
    shell: Shell,
    *,
    check_host: bool = True,
    posix_shell: str = "bash",
    report_cwd: bool = True,
    text_in_argv: bool = False,
) -> ShellLaunch:
    """`shell_argv`, with bash's command text in the environment unless ``text_in_argv``.

    ``text_in_argv=True`` (an operator's choice, `Supervisor`'s ``command_in_argv``): the text in
    argv as before, where ``ps`` and ``pgrep -f`` of every local user find it.
    """
    if shell != "bash" or text_in_argv:
        argv = shell_argv(
            command, shell, check_host=check_host, posix_shell=posix_shell, report_cwd=report_cwd
        )
        return ShellLaunch(argv, {})
    prelude = _BASH_PRELUDE if report_cwd else _BASH_PRELUDE_NO_REPORT
    return ShellLaunch((posix_shell, "-c", prelude + _BASH_FROM_ENV), {COMMAND_VAR: command + "\n"})
