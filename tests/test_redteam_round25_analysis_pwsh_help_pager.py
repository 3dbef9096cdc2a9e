"""Red team, round 25 (analysis): PowerShell's ``help`` was judged as bash's ``help`` builtin; it runs a pager.

In pwsh, ``help`` is a function of every session, not a program: it calls ``Get-Help`` and pipes
the text to ``$env:PAGER``, else to ``less -s -P ...`` on Linux and macOS (``more.com`` on
Windows). The analysis found no alias or cmdlet named ``help`` and fell through to the native
program models, where ``help`` is bash's harmless builtin, so ``help Get-Item`` was read-only and
ran unasked. ``less`` obeys the ``#env`` section of ``~/.lesskey`` even when its output is a pipe:
``LESSOPEN=|-CMD`` there runs CMD on the text it reads from standard input. How far it reaches:
the supervisor's base environment sets ``PAGER=cat``, so under it pwsh pipes to ``cat`` (on
Windows an alias of Get-Content: nothing runs); the pager is the caller's when its ``env`` layer
names one (``PAGER=less``, the usual value), and the function's reading was wrong either way.
``help`` is now not read-only in PowerShell (``Get-Help`` stays read-only; the reason says to use
it); bash's ``help`` builtin is unchanged. The pager half is shown with the real ``less`` in a
bubblewrap session (no pwsh on this machine: the PowerShell half is decisions only). The host's
own ``less`` (git's and man's pager) obeys the same files, so ``~/.lesskey``, ``~/.config/lesskey``
and ``~/.less`` are now protected home files, as round 17 made ``~/.manpath`` one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import shellrt
from shellrt.analysis import analyze
from shellrt.protocol import ToolUseBlock
from shellrt.supervisor._protect_home import HOME_FILES
from shellrt.tools.bash import Bash
from shellrt.tools.powershell import PowerShell
from tests._bwrap_session import require_bwrap
from tests._governance import default_decisions

pytestmark = pytest.mark.anyio

#: Each runs pwsh's help function, which pipes to a pager program.
ATTACKS = ["help Get-Item", "help", "HELP about_Modules", "help -Full Get-Item", "Get-Content x; help Get-Item",
           "help Get-Item | Out-String", "& { help Get-Item }"]
#: Still read-only (the cost side): the cmdlet itself pages nothing.
KEPT = ["Get-Help Get-Item", "Get-Help Get-Item -Full", "Get-Content x"]


def test_powershell_help_is_not_read_only() -> None:
    assert [c for c in ATTACKS if analyze(c, "powershell").read_only] == []
    reasons = " ".join(analyze("help Get-Item", "powershell").reasons)
    assert "Get-Help" in reasons and "pager" in reasons, reasons  # says why and what to use instead
    assert [c for c in KEPT if not analyze(c, "powershell").read_only] == []
    assert analyze("help cd").read_only  # bash's builtin pages nothing


async def test_powershell_tool_asks_for_help(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "x").write_text("x\n")
    decided = await default_decisions(tmp_path, PowerShell(), [*ATTACKS[:2], *KEPT])
    assert decided == ["ask", "ask", "allow", "allow", "allow"], decided


async def test_premise_less_in_a_pipe_runs_the_lesskey_preprocessor_in_bwrap(tmp_path: Path) -> None:
    """What the help function does on Linux (text | less -s -P ...), with a ~/.lesskey an earlier command wrote."""
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    plant = "printf '#env\\nLESSOPEN=|-touch %s/ran; cat %%s\\n' \"$PWD\" > \"$HOME/.lesskey\""
    page = "printf 'help text\\n' | env -u LESSOPEN less -s -P 'Page %db' > paged; cat paged; echo done"
    async with shellrt.Runtime(workspace=ws, sandbox="bwrap", session_dir=tmp_path / ".s", tools=[Bash()],
                               mode="bypassPermissions") as rt:
        await rt.run_envelopes([ToolUseBlock(id="p", name="Bash", input={"command": plant})])
        [env] = await rt.run_envelopes([ToolUseBlock(id="l", name="Bash", input={"command": page})])
    assert "done" in str(env.model.content), env.model.content
    assert (ws / "ran").exists()  # less ran the command ~/.lesskey named
    assert (ws / "paged").read_text() == "help text\n"  # and still printed the text (nothing looked wrong)


def test_lesskey_files_are_protected_home_files() -> None:
    """The host's own less (git log's and man's pager) obeys them too, as man-db obeys ``~/.manpath``."""
    assert {".lesskey", ".config/lesskey", ".less"} <= HOME_FILES
