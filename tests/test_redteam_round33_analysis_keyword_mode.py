"""Red team, round 33 (analysis): ``set -k`` turns ``NAME=VALUE`` arguments into the environment.

Round 30 asked for ``LD_PRELOAD=./x.so ls`` and ``printf … > k.sh; BASH_ENV=./k.sh bash -c :`` under
command rules. Keyword mode (``set -k``, ``set -o keyword``, ``shopt -so keyword``, ``bash -k``,
``SHELLOPTS=keyword``) spells the same as arguments: ``set -k; ls LD_PRELOAD=./x.so``,
``printf '\\x72m x' > k.sh; set -k; bash -c : BASH_ENV=./k.sh`` (runs rm), ``set -k; git diff
GIT_EXTERNAL_DIFF=./d``, ``/bin/bash -kc``, inside a ``trap`` string or an alias: 16 of 17 forms were allowed under
``Bash(rm:*)`` in ``bypassPermissions``
mode. Its switch is now a part no rule matches. ``set`` itself runs no code: ``set -e; ls`` and
``set -euo pipefail; …`` asked beside any command rule (round 31's "program with no model given
-e"), and are allowed again. Decisions of the real engine, the same for every
caller and backend; the start-up form runs in real bash below.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._hidden_code import rule_misses, run_bash

pytestmark = pytest.mark.anyio

ATTACKS = [
    "set -k; ls LD_PRELOAD=./x.so", "set -o keyword; ls LD_PRELOAD=./x.so", "shopt -so keyword; ls LD_PRELOAD=./x.so",
    "set -ek; ls LD_PRELOAD=./x.so", "bash -kc 'ls LD_PRELOAD=./x.so'", "printf '\\x72m x' > k.sh; set -k; bash -c : BASH_ENV=./k.sh",
    "set -k; git diff GIT_EXTERNAL_DIFF=./x.sh", "set -k; git log -p GIT_EXTERNAL_DIFF=./x.sh", "set -k; cat PATH=. f",
    "SHELLOPTS=keyword bash -c 'ls LD_PRELOAD=./x.so'", "env SHELLOPTS=keyword bash -c 'ls LD_PRELOAD=./x.so'",
    "set -k; git status GIT_CONFIG_GLOBAL=./g", "/bin/bash -kc 'ls LD_PRELOAD=./x.so'",
    "/usr/bin/env SHELLOPTS=keyword bash -c 'ls LD_PRELOAD=./x.so'", "trap 'set -k; ls LD_PRELOAD=./x.so' EXIT",
    "mapfile -C 'set -k; ls LD_PRELOAD=./x.so;:' -c 1 a <<< x",
    "shopt -s expand_aliases\nalias k='set -k'\nk\nls LD_PRELOAD=./x.so",
]
KEPT = ["alias ll='ls -la'; ll", "set -e; ls", "set -euo pipefail; ls", "sort -k 2 f", "bash -c 'ls'", "ls LD_PRELOAD=x"]


async def test_keyword_mode_meets_deny_rules(tmp_path: Path) -> None:
    assert await rule_misses(tmp_path, ATTACKS, KEPT) == ([], [])


def test_bash_passes_keyword_arguments_as_environment(tmp_path: Path) -> None:
    (tmp_path / "k.sh").write_text("touch marker\n")
    run_bash(tmp_path, "set -k; bash -c : BASH_ENV=./k.sh")
    assert (tmp_path / "marker").exists()
