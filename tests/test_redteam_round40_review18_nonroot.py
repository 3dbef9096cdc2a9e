"""Red team round 40 (review18): the round's attacks as an unprivileged caller (uid 65534).

A non-root caller's workspace, dotfiles and module path directories are its own to write: only the
after-command check and the file tools' judgement stand between a plant and the operator's next
program, the same host-side code as for root (bwrap cases included).
"""

from __future__ import annotations

import os
import shutil

from tests import _nonroot
from tests.conftest import require

_FILES = ("rcbraces", "libnames")


def test_the_round_40_review18_attacks_fail_for_an_unprivileged_caller() -> None:
    require(os.geteuid() == 0, "preparing a run as uid 65534 needs root (as non-root, the tests are it)")
    require(shutil.which("setpriv") is not None, "setpriv is not installed")
    args = [f"tests/test_redteam_round40_review18_{name}.py" for name in _FILES]
    collected, outcome = _nonroot.run_as_nobody(args)
    summary = outcome.output[-4000:]
    assert outcome.returncode == 0 and not (outcome.failures or outcome.errors), summary
    assert outcome.skipped == 0 and outcome.tests == collected.items, summary
