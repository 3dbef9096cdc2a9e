"""Red team, round 37 (analysis): an option that runs a program, its name hidden in a run-time word.

Round 36's name rule reads a run-time value of an option whose name says it runs a program
(``--pager="$x"``, ``--access-hook="$x"``), and round 35 made a run-time word given to a program of
`option_programs.OPTION_PROGRAMS` a part no rule matches, since it may be such an option itself. Programs
outside that list whose options run one took the option from a variable: ``p=--access-hook; git daemon
"$p=$x"``, ``p="-XX:OnError=$x"; java "$p"``, ``p="--preview=$x {}"; fzf "$p"``, ``read p <<< …``,
``printf -v``, an array, ``$'…'``: with ``x=$(printf '\\x72m')`` no word says ``rm``, and each passed
``Bash(rm:*)`` in ``bypassPermissions``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._hidden_code import rule_misses

pytestmark = pytest.mark.anyio

H = "x=$(printf '\\x72m'); "
ATTACKS = [H + f for f in [
    'read -r p <<< "--access-hook=$x"; git daemon "$p"', 'printf -v p -- \'--access-hook=%s\' "$x"; git daemon "$p"',
    'p=--access-hook=; git daemon "$p$x"', 'p=--access-hook; git daemon "$p=$x"', 'p=--access-hook; git daemon "$p" "$x"',
    'git daemon "--access-hoo""k=$x"', 'git daemon --access-ho\\ok="$x"', 'git daemon --acc{ess-hook,}="$x"',
    'for p in "--access-hook=$x"; do git daemon "$p"; done', 'p[0]="--access-hook=$x"; git daemon "${p[@]}"',
    'p+=("--access-hook=$x"); git daemon "${p[@]}"', 'p=$(printf -- \'--access-hook=%s\' "$x"); git daemon $p',
    'p="-XX:OnError=$x"; java "$p" -version', 'p="--access-hook=$x"; git daemon "$p"', 'p="--preview=$x {}"; fzf "$p"',
    'p=--pager; tig "$p=$x"', 'p=--photo-viewer; gpg "$p" "$x" --list-keys', 'p=-pdflatex; latexmk "$p=$x" f',
    'p=--password-command; rclone "$p=$x" ls r:', 'p=--httpd; git instaweb "$p=$x"',
]] + ["p=$(printf -- '--access-hook=\\x72m'); git daemon $p", "p=$(printf -- '-XX:OnError=\\x72m'); java $p -version",
      "p=$'--access-hook=\\x72m'; git daemon $p", "p=$'--preview=\\x72m x'; fzf $p"]
KEPT = ["git daemon --base-path=/srv", 'git daemon -- "$d"', "java -cp lib Main", 'fzf --query x', 'tig --all',
        'git log "$r"', 'p="-O2 $extra"; echo "$p"', 'desc="setup $x"; echo "$desc"']


async def test_a_hidden_option_name_meets_deny_rules(tmp_path: Path) -> None:
    assert await rule_misses(tmp_path, ATTACKS, KEPT) == ([], [])
