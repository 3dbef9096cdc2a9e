"""Red team round 37 (trust): the round's bwrap attacks as an unprivileged caller (uid 65534).

A non-root caller's commands run as its own uid, so the home's files are theirs to write: only the
after-command check stands between a plant and the operator's next program.
"""

from __future__ import annotations

import os
import shutil

from tests import _nonroot
from tests.conftest import require

_FILES = ("usersite", "gittemplate", "homecode", "rcloops", "yarnpath")


def test_the_round_37_trust_attacks_fail_for_an_unprivileged_caller() -> None:
    require(os.geteuid() == 0, "preparing a run as uid 65534 needs root (as non-root, the tests are it)")
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    require(shutil.which("setpriv") is not None, "setpriv is not installed")
    args = [f"tests/test_redteam_round37_trust_{name}.py" for name in _FILES] + ["-k", "bwrap"]
    collected, outcome = _nonroot.run_as_nobody(args)
    summary = outcome.output[-4000:]
    assert outcome.returncode == 0 and not (outcome.failures or outcome.errors), summary
    assert outcome.skipped == 0 and outcome.tests == collected.items, summary
