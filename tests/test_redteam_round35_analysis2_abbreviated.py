"""Red team, round 35 (analysis, wave 3): an abbreviated long option that runs a program.

GNU getopt_long, argp and git's parse-options take any unambiguous prefix of a long option: ``tar
--to-com=CMD`` is ``--to-command=CMD``, ``env --split=…`` is ``--split-string``, ``git ls-remote
--upload=CMD`` is ``--upload-pack``. The engine's table (``command_options``) matched whole names only,
so a program named at run time there (``x=$(printf '\\x72m'); env --split="$x y"``) passed ``Bash(rm:*)``
in ``bypassPermissions`` mode, and a static one was no form the deny rule read.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.permissions import embedded
from tests._hidden_code import rule_misses, run_bash

pytestmark = pytest.mark.anyio

H = "x=$(printf '\\x72m'); "
ATTACKS = [H + f for f in [
    'tar --to-com="$x y" -xf a.tar', 'env --split="$x y"', 'git ls-remote --upload=$x .', "sort --compress=$x -S 1 f",
    "man --pag=$x ls", 'tar --checkpoint-a=exec="$x y" -cf a.tar f', 'su --comm="$x y"',
]] + ["tar --to-com='rm y' -xf a.tar", "env --spl='rm y'", "git ls-remote --upload-p='rm y' ."]
KEPT = ["tar --checkpoint=10 -cf a.tar f", "sort --comp=gzip -S 1 f", "env --unset=X ls", "git ls-remote --heads ."]


async def test_abbreviated_program_options_are_read(tmp_path: Path) -> None:
    assert await rule_misses(tmp_path, ATTACKS, KEPT) == ([], [])
    assert embedded.command_options("tar", ["tar", "--to-com", "wc"]) == [("--to-command", "wc")]
    assert embedded.command_options("tar", ["tar", "--checkpoint=10"]) == []  # an option of its own


def test_env_takes_an_abbreviated_split_string(tmp_path: Path) -> None:
    (tmp_path / "y").write_text("")
    run_bash(tmp_path, H + 'env --split="$x y"')
    assert not (tmp_path / "y").exists()
