"""Red team, round 31 (analysis): what one call of a session leaves for the next one's judgement.

The permission engine judges one call: ``export LD_PRELOAD=…`` in call 1 and ``ls`` in call 2 is
safe only if call 2's shell does not inherit call 1's state. This runs both calls through the
Runtime and the Bash tool in bubblewrap (real processes): call 1 exports loader and option
variables (``LD_PRELOAD``, ``BASH_ENV``, ``ENV``, ``PYTHONSTARTUP``, ``GIT_CONFIG_*``, ``PATH`` to a
planted ``ls``), defines a function and an alias named ``ls`` (``export -f``, ``shopt -s
expand_aliases``), and writes start-up files in its ``HOME`` (bwrap's ``/tmp``, kept for the
session: ``.bashrc``, ``.profile``, ``.bash_aliases``, ``.gitconfig`` with ``core.fsmonitor``,
``.manpath`` ``DEFINE`` lines). Call 2 is judged read-only and must run none of it.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

import shellrt
from shellrt.analysis import analyze
from shellrt.protocol import ToolUseBlock
from shellrt.tools.bash import Bash
from tests._bwrap_session import require_bwrap

pytestmark = pytest.mark.anyio

_RUN = "touch \"$SHELLRT_WS\"/PWNED"  # each planted piece marks the workspace with its own suffix
PLANT = "\n".join([
    "mkdir -p bin && printf '#!/bin/sh\\ntouch %s_path\\n' \"$PWD/PWNED\" > bin/ls && chmod +x bin/ls",
    "printf 'touch %s_bashenv\\n' \"$PWD/PWNED\" > e.sh; printf 'open(\"%s_py\", \"w\")\\n' \"$PWD/PWNED\" > e.py",
    "export SHELLRT_WS=$PWD LD_PRELOAD=/nonexistent/x.so BASH_ENV=$PWD/e.sh ENV=$PWD/e.sh PYTHONSTARTUP=$PWD/e.py",
    "export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0=\"touch $PWD/PWNED_gitenv\"",
    "export PATH=$PWD/bin:$PATH",
    f"ls() {{ {_RUN}_func; }}; export -f ls; shopt -s expand_aliases; alias ls='{_RUN}_alias'",
    f"for f in .bashrc .profile .bash_profile .bash_aliases .bash_login; do echo '{_RUN}_rc' > ~/$f; done",
    "h=$HOME; printf '[core]\\n\\tfsmonitor = touch %s_gitcfg\\n' \"$PWD/PWNED\" > \"$h/.gitconfig\"",
    "printf 'DEFINE\\tpager\\ttouch %s_man\\n' \"$PWD/PWNED\" > \"$h/.manpath\"",
    "ls >/dev/null; echo planted",
])
#: Call 2: read-only, unasked in default mode; prints what it inherited.
LATER = "ls; git status --short; man -w ls; echo \"LD=$LD_PRELOAD BE=$BASH_ENV PS=$PYTHONSTARTUP\"; type ls"


async def test_a_later_call_inherits_no_variable_function_alias_or_start_up_file(tmp_path: Path) -> None:
    require_bwrap()
    assert analyze(LATER).read_only, analyze(LATER).reasons  # call 2 runs unasked in default mode
    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    async with shellrt.Runtime(workspace=ws, sandbox="bwrap", session_dir=tmp_path / ".s", tools=[Bash()],
                               mode="bypassPermissions") as rt:
        first, second = [
            (await rt.run_envelopes([ToolUseBlock(id=f"c{i}", name="Bash", input={"command": c})]))[0]
            for i, c in enumerate([PLANT, LATER])
        ]
    texts = [str(first.model.content), str(second.model.content)]
    # The premise: call 1 planted everything, and its own ls ran the alias (the shell honoured it).
    assert "planted" in texts[0] and (ws / "PWNED_alias").exists() and (ws / "bin" / "ls").exists(), texts
    (ws / "PWNED_alias").unlink()
    assert sorted(p.name for p in ws.glob("PWNED*")) == [], texts
    assert "LD= BE= PS=" in texts[1] and re.search(r"ls is (hashed \()?(/usr)?/bin/ls", texts[1]), texts
