"""Red team, round 41 (analysis4): a redirection written after a here-document's start.

``cat <<EOF > .git/hooks/pre-commit`` is how agents write files; tree-sitter-bash nests the ``> f`` in
the here-document's node, where the planner took it for an unsupported node: the analysis said "writes
unknown", but the part the engine judges wrote nothing, so no check saw a hook (or ``conftest.py``,
``Makefile``, ``~/bin/ls``) written beside the program that runs it. With ``Bash(rm:*)`` denied,
``bypassPermissions`` mode ran them; ``q`` holds ``/bin/rm`` under a hidden name and the body runs it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.analysis import analyze
from tests._hidden_code import rule_misses

pytestmark = pytest.mark.anyio

H = "x=$(printf '/bin/\\x72m'); cp -- \"$x\" q; "
BODY = "\n#!/bin/sh\n./q y\nEOF\n"
ATTACKS = [H + f for f in [
    "cat <<EOF > .git/hooks/pre-commit" + BODY + "git commit -m x",
    "cat <<'EOF' > .git/hooks/pre-commit" + BODY + "git commit -m x",
    "cat <<EOF >> .git/hooks/pre-commit" + BODY + "git commit -m x",
    "cat <<-EOF 2>/dev/null >.git/hooks/pre-commit" + BODY + "git commit -m x",
    "cat <<EOF > conftest.py\nimport os\nos.system('./q y')\nEOF\npytest",
    "cat <<EOF > Makefile\nall:\n\t./q y\nEOF\nmake",
    "cat <<EOF > ~/bin/ls" + BODY + "ls y",
    "{ cat; } <<EOF > .git/hooks/pre-commit" + BODY + "git commit -m x",
    "while read -r l; do echo \"$l\"; done <<EOF > .git/hooks/pre-commit" + BODY + "git commit -m x",
]]
KEPT = ["cat <<EOF > notes.md\nhi\nEOF\ngit status", "cat <<'EOF' > a.txt\nx\nEOF\ngit add a.txt"]


async def test_a_here_documents_trailing_redirection_is_a_write_the_checks_see(tmp_path: Path) -> None:
    assert await rule_misses(tmp_path, ATTACKS, KEPT) == ([], [])


@pytest.mark.parametrize(
    ("command", "targets"),
    [
        ("cat <<EOF > out.txt\nhi\nEOF", ["out.txt"]),
        ("cat <<EOF 2>err >out\nhi\nEOF", ["err", "out"]),
        ("cat <<EOF > out && ls >y\nhi\nEOF", ["out", "y"]),
        ("for i in 1; do cat; done <<EOF > o\nhi\nEOF", ["o"]),
        ("echo $(cat <<EOF > o\nhi\nEOF\n)", ["o"]),
    ],
)
def test_the_analysis_names_the_write(command: str, targets: list[str]) -> None:
    a = analyze(command)
    assert (a.read_only, a.write_targets, a.writes_unknown) == (False, targets, False)


def test_a_trailing_redirection_to_dev_null_or_a_descriptor_keeps_a_read_read_only() -> None:
    for command in ("grep x <<EOF 2>/dev/null\nhi\nEOF", "cat <<EOF >&2\nhi\nEOF"):
        assert analyze(command).read_only, command
