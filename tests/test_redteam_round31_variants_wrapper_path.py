"""Red team, round 31 (variants): a here-string fed to a shell behind a wrapper spelt as a path.

Class (d) of earlier rounds: code a deny rule cannot read (a shell's or interpreter's standard
input, an inline program) is asked, never allowed, beside a ``Bash(...)`` deny or ask rule (round
29). The analysis looks through wrappers by their bare name (``env sh``, ``nice sh``, ``sudo sh``);
spelt as a path (``/usr/bin/env sh <<<'rm x'``) the wrapped shell's argv kept the wrapper in front,
the check read ``sh`` as the wrapper's script operand (a file that exists before the call) and
``bypassPermissions`` ran ``rm x`` past ``Bash(rm:*)``: 15 of the 17 below were allowed under the
deny rule and 15 under an ask rule (30 of 51 verdicts; ``acceptEdits`` asked). The fix adds, for
each wrapper spelt as a path, the part it runs (`shellrt.permissions.path_wrappers`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.tools.bash import Bash
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide

pytestmark = pytest.mark.anyio

HIDDEN = [
    "/usr/bin/env sh <<<'rm x'",
    "/usr/bin/env bash <<<'rm x'",
    "/usr/bin/env FOO=1 sh <<<'rm x'",
    "/usr/bin/env -i dash <<<'rm x'",
    "/usr/local/bin/env sh <<<'rm x'",
    "/usr/bin/nice sh <<<'rm x'",
    "/usr/bin/nice -n 1 /usr/bin/env sh <<<'rm x'",
    "/usr/bin/timeout 5 sh <<<'rm x'",
    "/usr/bin/nohup sh <<<'rm x'",
    "/usr/bin/sudo sh <<<'rm x'",
    "/usr/bin/setsid sh <<<'rm x'",
    "/usr/bin/time sh <<<'rm x'",
    "/usr/bin/stdbuf -o0 bash <<EOF\nrm x\nEOF",
    "echo 'rm x' | /usr/bin/env sh",
    "/usr/bin/env sh < s",
    "/usr/bin/env python3 <<<'import os'",
    "/usr/bin/env perl -e 'unlink q(x)'",
]


async def test_a_wrapper_spelt_as_a_path_hides_no_unread_code(tmp_path: Path) -> None:
    allowed = []
    for mode in ("bypassPermissions", "acceptEdits"):
        got = await decide(tmp_path, Bash(), HIDDEN, mode, deny=["Bash(rm:*)"])
        allowed += [(mode, c) for c, d in zip(HIDDEN, got, strict=True) if d == "allow"]
    got = await decide(tmp_path, Bash(), HIDDEN, "bypassPermissions", ask=["Bash(rm:*)"])
    allowed += [("ask rule", c) for c, d in zip(HIDDEN, got, strict=True) if d == "allow"]
    assert allowed == [], f"{len(allowed)} of {3 * len(HIDDEN)} allowed: {allowed}"
    # Script files that exist before the call stay the workspace's code, as with bare names.
    plain = ["/usr/bin/env sh s.sh", "/usr/bin/nice python3 s.py", "/usr/bin/env ls", "/usr/bin/timeout 5 make"]
    got = await decide(tmp_path, Bash(), plain, "bypassPermissions", deny=["Bash(rm:*)"])
    assert got == ["allow"] * len(plain), list(zip(plain, got, strict=True))
    # The class: a wrapper spelt as a path is never allowed where its bare name is not (the analysis
    # reads a bare `sh <<<'rm x'` as a script and denies it; spelt as a path it is asked: the
    # analysis' part, outside this area).
    spelt = [c.replace("/usr/local/bin/", "").replace("/usr/bin/", "") for c in HIDDEN + PAIRS]
    bare = await decide(tmp_path, Bash(), spelt, "bypassPermissions", deny=["Bash(rm:*)"])
    path = await decide(tmp_path, Bash(), HIDDEN + PAIRS, "bypassPermissions", deny=["Bash(rm:*)"])
    rank = {"allow": 0, "passthrough": 0, "ask": 1, "deny": 2}
    weaker = [(c, b, p) for c, b, p in zip(HIDDEN + PAIRS, bare, path, strict=True) if rank[p] < min(rank[b], 1)]
    assert weaker == []


#: Commands whose other parts (a file written first, a loader variable) decide the verdict.
PAIRS = [
    "cp /tmp/a x.so; /usr/bin/env LD_PRELOAD=./x.so ls",
    "cp /tmp/a s; /usr/bin/nice sh s",
    "cp /tmp/a m.py; /usr/bin/env PYTHONPATH=. python3 -m m",
    "cp /tmp/a s; /usr/bin/timeout 5 ./s",
    "/usr/bin/env GIT_PAGER=sh git log",
    "/usr/bin/env PYTHONPATH=. python3 -m x",
]


async def test_a_system_program_spelt_outside_the_bin_dirs_is_read_as_its_name(tmp_path: Path) -> None:
    """``/usr/lib/git-core/git`` is git (Debian ships the same binary there): its name stayed the
    path, so round 29's check of code-running option values (``core.pager=sh``, fed the log of a
    hostile repository) did not read it: allowed under ``Bash(rm:*)`` before (1 of 1)."""
    spelt = ["/usr/lib/git-core/git -c core.pager=sh log", "/usr/libexec/git-core/git -c core.pager='perl -' log"]
    got = await decide(tmp_path, Bash(), spelt, "bypassPermissions", deny=["Bash(rm:*)"])
    assert [c for c, d in zip(spelt, got, strict=True) if d == "allow"] == []
    got = await decide(tmp_path, Bash(), ["/usr/lib/git-core/git log", "/opt/x/bin/python3 s.py"], "bypassPermissions",
                       deny=["Bash(rm:*)"])
    assert got == ["allow", "allow"]


async def test_git_spelt_by_path_or_dashed_meets_git_rules(tmp_path: Path) -> None:
    """git named by a path outside the bin dirs skipped the engine's git forms (``-C d push``, an
    alias naming ``push``), and git's own dashed name (``/usr/lib/git-core/git-push``, a link to git
    that runs ``git push``) met no ``Bash(git push:*)`` rule: 3 of 5 allowed before."""
    spelt = [
        "/usr/lib/git-core/git-push origin main",
        "/usr/libexec/git-core/git-push --force origin main",
        "/usr/lib/git-core/git -c alias.p=push p",
        "/usr/lib/git-core/git --no-pager -C . push",
        "/usr/lib/git-core/git -C . push origin",
    ]
    got = await decide(tmp_path, Bash(), spelt, "bypassPermissions", deny=["Bash(git push:*)"])
    assert [c for c, d in zip(spelt, got, strict=True) if d == "allow"] == []
    plain = ["/usr/lib/git-core/git-status", "/usr/lib/git-core/git log"]
    got = await decide(tmp_path, Bash(), plain, "bypassPermissions", deny=["Bash(git push:*)"])
    assert got == ["allow"] * len(plain), list(zip(plain, got, strict=True))
    # A dashed name is judged as git's own form (an unknown subcommand may be an alias: refused).
    pair = ["git-lfs ls-files", "git lfs ls-files"]
    got = await decide(tmp_path, Bash(), pair, "bypassPermissions", deny=["Bash(git push:*)"])
    assert got[0] == got[1], list(zip(pair, got, strict=True))

