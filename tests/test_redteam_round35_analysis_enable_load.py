"""Red team, round 35 (analysis): ``enable NAME`` loads ``NAME`` as a shared object.

bash 5.2 loads a name that is not a builtin from ``BASH_LOADABLES_PATH`` even without ``-f``, and
that path's default ends in ``.``: ``enable x`` (also ``-n``, ``-a``, ``-s``, ``--``, beside a
builtin, ``builtin enable``, ``command enable``, ``./x``) dlopens the repository's ``x``, whose
constructor runs in the shell. ``enable -f`` asked since round 31; these 9 forms were allowed past
``Bash(rm:*)`` in ``bypassPermissions`` mode. Now any operand that is not a builtin's name asks.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from shellrt.tools.bash import Bash
from tests._hidden_code import rule_misses
from tests.conftest import require
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide

pytestmark = pytest.mark.anyio

ATTACKS = ["enable x", "enable -n x", "enable -a x", "enable -s x", "enable -- x", "enable echo x",
           "builtin enable x", "command enable x", "enable ./x", "enable $n", "enable x*"]
KEPT = ["enable", "enable -a", "enable -p", "enable -n echo", "enable echo test", "enable -ns kill"]


async def test_enable_of_a_name_that_is_no_builtin_is_code(tmp_path: Path) -> None:
    assert await rule_misses(tmp_path, ATTACKS, KEPT) == ([], [])
    for mode in ("default", "acceptEdits", "plan"):
        got = await decide(tmp_path, Bash(), ATTACKS[:3], mode, deny=["Bash(rm:*)"])
        assert "allow" not in got, mode


def test_bash_opens_the_workspace_file_for_enable_without_f(tmp_path: Path) -> None:
    """``x`` links to a shared object this process has loaded (libc): bash loads it, then finds no
    ``x_struct`` in it and says so (its constructors have run by then; no compiler needed)."""
    bash = shutil.which("bash")
    require(bash is not None, "bash not installed")
    assert bash is not None
    maps = Path("/proc/self/maps").read_text().split()
    (tmp_path / "x").symlink_to(next(w for w in maps if w.startswith("/") and Path(w).name.startswith(("libc.so", "libc-"))))
    version = subprocess.run([bash, "-c", "echo ${BASH_VERSINFO[0]}${BASH_VERSINFO[1]}"], capture_output=True,
                             text=True, timeout=30).stdout.strip()
    result = subprocess.run([bash, "-c", "enable -n x"], cwd=tmp_path, env={"PATH": "/usr/bin:/bin"},
                            capture_output=True, text=True, timeout=30)
    if int(version or 0) >= 52:
        assert "x_struct" in result.stderr, result.stderr
