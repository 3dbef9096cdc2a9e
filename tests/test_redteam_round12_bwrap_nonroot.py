"""Red team round 12 (bwrap), the non-root caller: the round's probes run as uid 65534, for real.

A non-root caller's commands keep its uid, a pid namespace is all that parts them from its
other processes, and the per-command sandbox gets bwrap's own ``/dev`` (not the session's
device tree): the round's fd, signal, pid-1 and /dev/shm probes must hold there too. A skip
is a failure here (``CI=true``), and every test root collected must run.
"""

from __future__ import annotations

import pytest

from tests import _nonroot
from tests.test_sandbox_escape_nonroot import _prerequisites

pytestmark = pytest.mark.bwrap

SELECTION = ["tests/test_redteam_round12_bwrap_reach.py", "tests/test_redteam_round12_bwrap_shm.py"]


def test_round_12_probes_hold_for_an_unprivileged_caller() -> None:
    _prerequisites()
    collected, outcome = _nonroot.run_as_nobody(SELECTION, timeout=600)
    _nonroot.assert_all_held(collected, outcome)
