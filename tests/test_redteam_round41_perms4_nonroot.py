"""Red team round 41 (perms4): the round's attacks as an unprivileged caller (uid 65534).

A non-root caller's bwrap zygote runs on the same interpreter, in the host's mount namespace: a
repository's mask over that interpreter, its libraries, ``/proc`` or ``/dev`` must leave its session
sandbox as it is too.
"""

from __future__ import annotations

import os
import shutil

from tests import _nonroot
from tests.conftest import require


def test_the_round_41_perms4_attacks_fail_for_an_unprivileged_caller() -> None:
    require(os.geteuid() == 0, "preparing a run as uid 65534 needs root (as non-root, the tests are it)")
    require(shutil.which("setpriv") is not None, "setpriv is not installed")
    collected, outcome = _nonroot.run_as_nobody(["tests/test_redteam_round41_perms4_ownmasks.py"])
    summary = outcome.output[-4000:]
    assert outcome.returncode == 0 and not (outcome.failures or outcome.errors), summary
    assert outcome.skipped == 0 and outcome.tests == collected.items, summary
