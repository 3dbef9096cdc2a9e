"""Red team, round 56 (analysis13): a glob option word expands to a repository file named like an option.

bash matches a whole word against the directory's names. Beside files a hostile repository ships, named
``--from-file=.env``, ``--file=.env``, ``-f.env``, ``-m.env``, the words ``diff --from-file=* f``, ``date -f*``,
``grep x ?f.env``, ``file -m* f`` run as ``diff --from-file=.env f``, ``date -f.env`` (each line of ``.env`` in
its error), ``grep x -f.env``, ``file -m.env f``: each reads ``.env``, while the words show ``*``, ``.env``
after ``?f`` or ``.e*`` (not expanded as a value). Read-only, they ran unasked beside a ``Read(./.env)`` deny
rule. Now an option word holding a pattern gives its part an unknown read ("") when the program has a
file-valued option it may spell (the analysis), and a pattern's match that starts with ``-`` reads every value
it may carry as an option (the tools: ``-f.env`` reads ``.env``).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from shellrt.tools.bash import Bash
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide

NAMES = ["--from-file=.env", "--to-file=.env", "--file=.env", "-f.env", "-m.env", "--magic-file=.env", "-F.env"]
ATTACKS = ["date -f*", "date --file=*", "date --file=.e*", "diff --from-file=* f", "diff --from-file=.[^x]nv f",
           "diff f --to-file=.e*", "file -m* f", "file --magic-file=* f", "grep x -f*", "grep x --file=*",
           "grep x ?f.env", "grep x [^x]f.env", "hexdump -f* f", "pgrep -F*", "diff ?-from-file=.env f",
           "diff f [-]-to-file=.e*", "grep x [[:punct:]]-file=.env", "file ?m.env f"]  # fmt: skip
KEPT = ["grep x f*", "diff -u f*", "wc -l f*", "md5sum f*", "cat -n f*", "file f*", "date +%s", "du -s s*"]


def _workspace(root: Path) -> Path:
    ws = root / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / ".env").write_text("hunter2\n")
    (ws / "f").write_text("x\n")
    for name in NAMES:
        (ws / name).write_text("")
    return ws


def test_bash_reads_the_file_an_expanded_option_names(tmp_path: Path) -> None:
    """The premise, with bash 5.2 (GNU date, diff, file): each prints the secret."""
    ws = _workspace(tmp_path)
    printing = ["date -f*", "date --file=.e*", "diff --from-file=* f", "diff --from-file=.[^x]nv f",
                "diff f --to-file=.e*", "file -m* f", "diff ?-from-file=.env f"]  # fmt: skip
    for command in printing:
        ran = subprocess.run(["bash", "-c", command], cwd=ws, capture_output=True, text=True, timeout=30)
        assert "hunter2" in ran.stdout + ran.stderr, command


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["default", "plan", "bypassPermissions"])
async def test_an_option_glob_naming_a_denied_file_is_not_allowed(tmp_path: Path, mode: str) -> None:
    ws = _workspace(tmp_path)
    got = await decide(tmp_path, Bash(), ATTACKS + KEPT, mode, ws=ws, deny=["Read(./.env)"])
    assert [c for c, g in zip(ATTACKS, got, strict=False) if g == "allow"] == []
    assert got[len(ATTACKS) :] == ["allow"] * len(KEPT)
