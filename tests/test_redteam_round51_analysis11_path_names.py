"""Red team, round 51 (analysis11): a program named by its system path kept the checks keyed on its bare name.

Round 35 made a run-time word given to a program one of whose options runs a program (``rg "$p" y .``,
``p=--pre=./x``; ``sort --compress-program``, ``find -exec``, ``tar --to-command``) a part no allow rule
matches, and ``rg --pre "$x"`` too; the check read the command's word as written, so ``/usr/bin/rg "$p" y .``
(the same program: the part names read it as ``rg``) had no such part (5 of 5 below). The engine's
allow-rule reach check happened to ask for these too (a run-time word is a path it cannot place), so the
decision held; the plan is now one reading, the one the part names use (``wrappers.program_name``).
"""

from __future__ import annotations

from shellrt.analysis import analyze

PAIRS = [('rg "$p" y .', '/usr/bin/rg "$p" y .'), ('sort "$p" x', '/usr/bin/sort "$p" x'),
         ('rg --pre "$x" y .', '/usr/bin/rg --pre "$x" y .'), ("find . $p", "/usr/bin/find . $p"),
         ('tar "$o" -cf x .', '/bin/tar "$o" -cf x .')]  # fmt: skip


def _gates(command: str) -> list[str]:
    return [part.text.split(":", 1)[0] for part in analyze(command).subcommands if not part.name]


def test_a_path_named_program_gets_the_parts_its_bare_name_gets() -> None:
    missed = [path for bare, path in PAIRS if not _gates(bare) or _gates(path) != _gates(bare)]
    assert missed == []
    assert _gates('./rg "$p" y') == []  # a workspace file named rg is no known program: other checks ask
