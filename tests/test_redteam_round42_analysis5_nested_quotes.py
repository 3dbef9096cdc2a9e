"""Red team, round 42 (analysis5): a run-time write whose word nests quotes inside a substitution.

Round 41 counted a write whose run-time word ends in the name of a program the command runs
(``d=~/bin; cp q "$d/ls"; ls``), but read the writing part's words with ``shlex``, which knows no
``$(…)``: ``"$(dirname "$(command -v git)")/ls"`` was cut inside the substitution, so the ``/ls`` after
it was never read (round 41's Left), and ``ls`` ran the copy past ``Bash(rm:*)`` in
``bypassPermissions``. ``q`` holds ``/bin/rm`` under a hidden name.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.analysis.text_words import split_words
from tests._hidden_code import rule_misses

pytestmark = pytest.mark.anyio

H = "x=$(printf '/bin/\\x72m'); cp -- \"$x\" q; "
ATTACKS = [H + f for f in [
    'cp q "$(dirname "$(command -v git)")/ls"; ls y', 'cp q "$(dirname "$(which git)")/ls"; ls y',
    'cp q "$(dirname "$(command -v git)")"/ls; ls y', 'cp q "${HOME:-"/x y"}/bin/ls"; ls y',
    'install q "$(dirname "$(type -P git)")/ls"; ls y', 'ln -sf "$PWD/q" "$(dirname "$(command -v git)")/cat"; cat y',
    'cp q "`dirname \\"$(command -v git)\\"`/ls"; ls y',
]]
KEPT = ['cp a "$(dirname "$(command -v git)")/tool2"; ls y', 'cp a "$(pwd)/b.txt"; ls', 'cp a "$(mktemp -d)/x"; ls']


async def test_a_written_word_nesting_quotes_is_read_past_its_substitution(tmp_path: Path) -> None:
    assert await rule_misses(tmp_path, ATTACKS, KEPT) == ([], [])


def test_words_keep_a_substitution_whole() -> None:
    assert split_words('cp q "$(dirname "$(command -v git)")/ls"') == ["cp", "q", '$(dirname "$(command -v git)")/ls']
    assert split_words("cp 'a b' c\\ d \"e $(echo \")\") f\"") == ["cp", "a b", "c d", 'e $(echo ")") f']
    assert split_words('cp `which ls` ${a:-"x y"}/ls') == ["cp", "`which ls`", '${a:-"x y"}/ls']
