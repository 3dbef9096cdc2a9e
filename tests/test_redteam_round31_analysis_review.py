"""Red team, round 31 (analysis): a line-by-line review of round 30's readers, bypasses found.

With ``Bash(rm:*)`` denied, in ``bypassPermissions`` mode (deny rules are the only guard): gawk's
indirect calls and ``@include`` (``f = "sys" "tem"; @f($0)``: the name is in strings, which
``awk_code`` empties), and commands given as the value of a variable that names a command
(``LESSOPEN``, ``GIT_PAGER``, ``GIT_SSH_COMMAND``) or of an option (``core.pager``): a program with no
model reading the output it is fed (``GIT_PAGER=guile``), given code (``guile -c``, ``kotlin -e``),
a shell whose ``-c`` code computes a program name (``sh -c "$(printf r)m x"``), or ``LESSOPEN``'s
``|-`` prefix; mawk's ``-W exec /dev/stdin`` (any prefix: ``-We -``), a program on standard input. Decisions of the real engine: the same for root and non-root callers and on every
backend (no process is run).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.tools.bash import Bash
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide

pytestmark = pytest.mark.anyio

BYPASSES = [
    "awk '{f=\"sys\" \"tem\"; @f($0)}' f", "awk '@include \"/dev/stdin\"' f", "awk '{ @f(\"x\") }' f",
    "LESSOPEN='|sh -c \"$(printf r)m x\" %s' less f", "LESSOPEN='|-guile -c x %s' less f",
    "GIT_SSH_COMMAND='guile -c \"(system x)\"' git fetch", "GIT_SSH_COMMAND='kotlin -e x' git fetch",
    "GIT_PAGER='guile' git log", "GIT_PAGER='nice guile' git log", "PAGER='guile -c x' man ls",
    "git -c core.pager='kotlin -e x' log", "git -c core.sshCommand='guile --eval x' fetch",
    "git -c core.pager=guile log", "git -c core.pager='X=1 guile' log", "GIT_PAGER='x; guile' git log",
    "mawk -W exec /dev/stdin f", "mawk -We - f", "mawk -W ex /dev/fd/0 f", "awk -W exec /dev/stdin f",
    "mawk -W interactive,exec /dev/stdin f", "mawk -W e '{system($0)}' f", "mawk -W interactive '{system($0)}' f",
]


async def test_review_bypasses_ask(tmp_path: Path) -> None:
    got = await decide(tmp_path, Bash(), BYPASSES, "bypassPermissions", deny=["Bash(rm:*)"])
    assert [c for c, d in zip(BYPASSES, got, strict=True) if d == "allow"] == []


async def test_ordinary_values_and_awk_are_judged_as_before(tmp_path: Path) -> None:
    kept = [
        "GIT_PAGER='less -R' git log", "git -c core.pager=less log", "GIT_PAGER=cat git log",
        "CFLAGS='-O2 -c' make", "RUSTFLAGS='-C target-cpu=native' cargo build", "X=1 npm test",
        "awk '{print $1 \"@\" $2}' f", "awk -F@ '{print $1}' f", "EDITOR=vim git commit -m x",
        "LESSOPEN='|lesspipe %s' less f",
        "mawk -W version", "mawk -W exec p.awk f", "mawk -W interactive '{print $1}' f",
    ]
    got = await decide(tmp_path, Bash(), kept, "bypassPermissions", deny=["Bash(rm:*)"])
    assert [c for c, d in zip(kept, got, strict=True) if d != "allow"] == []
