"""Red team, round 35 (analysis): a function handed to bash through ``BASH_FUNC_NAME%%``.

A bash that starts with ``BASH_FUNC_ls%%='() { …; }'`` in its environment defines ``ls`` as that
function: ``env 'BASH_FUNC_ls%%=() { x=$(printf "\\x72m"); $x y; }' bash -c ls`` (or any bash script
of the repository that says ``ls``) runs the body, which no part shows (the name is no shell
assignment, so round 30's loader checks never read it): allowed past ``Bash(rm:*)`` in
``bypassPermissions`` mode before. Any ``BASH_FUNC_…`` variable is a loader of code now.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._hidden_code import rule_misses, run_bash

pytestmark = pytest.mark.anyio

BODY = '() { x=$(printf "\\x72m"); $x y; }'
ATTACKS = [
    f"env 'BASH_FUNC_ls%%={BODY}' bash -c ls", f"env 'BASH_FUNC_ls%%={BODY}' ./build.sh",
    f"env -u HOME 'BASH_FUNC_ls%%={BODY}' bash -c ls", f"nice env 'BASH_FUNC_ls%%={BODY}' bash -c ls",
    f"timeout 5 env 'BASH_FUNC_ls%%={BODY}' sh build.sh", f"env 'BASH_FUNC_ls()={BODY}' bash -c ls",
    f"env BASH_FUNC_ls%%=\"{BODY}\" make",
]
KEPT = ["env FOO=1 bash -c ls", "env LANG=C ls", "env -u HOME ./build.sh"]


async def test_exported_functions_load_code(tmp_path: Path) -> None:
    assert await rule_misses(tmp_path, ATTACKS, KEPT) == ([], [])


def test_bash_imports_the_function(tmp_path: Path) -> None:
    run_bash(tmp_path, "env 'BASH_FUNC_f%%=() { x=$(printf \"\\x74ouch\"); $x p; }' bash -c f")
    assert (tmp_path / "p").exists()
