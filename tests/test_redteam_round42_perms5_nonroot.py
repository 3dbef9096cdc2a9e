"""Red team round 42 (perms5): the round's rule-spelling and home attacks as an unprivileged caller (uid 65534).

A non-root caller's governance and masks read the same rules: a repository's Windows-style or
escaped rule must deny and mask the same file, and a ``~/`` rule must mean one home whatever
``HOME`` says, for it too. (The ACL and glob-name attacks concern a root caller's host only.)
"""

from __future__ import annotations

import os
import shutil

from tests import _nonroot
from tests.conftest import require


def test_the_round_42_perms5_attacks_fail_for_an_unprivileged_caller() -> None:
    require(os.geteuid() == 0, "preparing a run as uid 65534 needs root (as non-root, the tests are it)")
    require(shutil.which("setpriv") is not None, "setpriv is not installed")
    collected, outcome = _nonroot.run_as_nobody(
        ["tests/test_redteam_round42_perms5_windows.py", "tests/test_redteam_round42_perms5_home.py"]
    )
    summary = outcome.output[-4000:]
    assert outcome.returncode == 0 and not (outcome.failures or outcome.errors), summary
    assert outcome.skipped == 0 and outcome.tests == collected.items, summary
