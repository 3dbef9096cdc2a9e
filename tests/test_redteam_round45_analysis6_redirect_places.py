"""Red team, round 45 (analysis6): a redirection writes a program where ``PATH`` finds it, under a name
known only at run time.

Round 41 read the static pieces of a run-time word a writing part names (``d=~/bin; cp q "$d/ls"; ls``)
and round 42 kept nested quotes whole, but both read the part's *text*, which holds no redirection: the
engine saw ``cat q > "$d/ls"`` as ``cat q`` writing "" (not static), so ``ls`` ran the copy past
``Bash(rm:*)`` in ``bypassPermissions`` (round 42's Left). ``q`` holds ``/bin/rm`` under a hidden name.
Now a part carries each run-time redirection as written (`Subcommand.write_words`), and the checks that
read a writing part's words read those too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.analysis import analyze
from tests._hidden_code import rule_misses

pytestmark = pytest.mark.anyio

H = "x=$(printf '/bin/\\x72m'); cp -- \"$x\" q; "
ATTACKS = [H + f for f in [
    'cat q > "$d/ls"; ls y', 'd=~/bin; cat q > "$d/ls"; ls y', 'cat q > "$(dirname "$(command -v git)")/ls"; ls y',
    'cat q > "$HOME/bin/ls"; ls y', 'cat q >"${HOME}"/bin/cat; cat y', 'cat <q > "$d/ls"; ls y',
    'echo "$x \\"\\$@\\"" > "$d/ls"; ls y', 'cat q 2>/dev/null >> "$d/l"s; ls y', '> "$d/ls"; ls y',
    'for d in $PATH; do cat q > "$d/ls"; done; ls y', 'cat q > "$(which ls)"; ls y',
    'cat q > "$d/x"; cat q > "$d/ls"; ls y',
]]
KEPT = ['echo x > "$out"; ls', 'cat a > "$d/notes.txt"; ls', 'echo hi > "$HOME/x.log"; cat y',
        'echo x > out.txt; ls', 'ls > "$f"']


async def test_a_run_time_redirection_target_is_read_for_its_static_pieces(tmp_path: Path) -> None:
    assert await rule_misses(tmp_path, ATTACKS, KEPT) == ([], [])


def test_a_part_keeps_its_run_time_redirections_as_written() -> None:
    parts = analyze('cat q 2>/dev/null > "$d/ls" >> out; > "${h}"/x').subcommands
    assert [(p.text, p.writes, p.write_words) for p in parts] == [
        ("cat q", ["", "out"], ['> "$d/ls"']), ("> \"${h}\"/x", [""], ['> "${h}"/x'])
    ]
