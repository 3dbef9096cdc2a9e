"""Red team round 13 (bwrap limits), the non-root caller: the fork-bomb probe run as uid 65534, for real
(its default pids cap is RLIMIT_NPROC there). A skip is a failure here (``CI=true``). Serial: the
probe counts every process of uid 65534, which other non-root runs would add to."""

from __future__ import annotations

import pytest

from tests import _nonroot
from tests.test_sandbox_escape_nonroot import _prerequisites

pytestmark = [pytest.mark.bwrap, pytest.mark.serial]  # counts every process of uid 65534

SELECTION = ["tests/test_redteam_round13_rules_bomb.py"]


def test_the_default_pids_cap_holds_for_an_unprivileged_caller() -> None:
    _prerequisites()
    collected, outcome = _nonroot.run_as_nobody(SELECTION, timeout=600)
    _nonroot.assert_all_held(collected, outcome)
