"""Red team, round 47 (sandbox7): the round's attacks as a non-root caller (uid 65534), in one run.

One child pytest as uid 65534 for every attack of the round (`tests._nonroot`): the preparation and
the child's start are most of such a run's time, so the attacks share them.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests import _nonroot
from tests.conftest import require

pytestmark = pytest.mark.bwrap

_HERE = Path(__file__).parent
#: (file, test) of each attack of the round; each runs in a session and per command.
_ATTACKS = (
    ("test_redteam_round47_sandbox7_hostproc.py", "test_no_host_wide_proc_or_sys_file_opens_for_writing"),
    ("test_redteam_round47_sandbox7_uidshare.py", "test_a_command_leaves_its_callers_budgets_alone"),
    ("test_redteam_round47_sandbox7_directmap.py", "test_a_command_gets_no_secret_memory"),
    # round 48 (sandbox8): the zygote's own sends under its commands' share; one child run for both rounds
    (
        "test_redteam_round48_sandbox8_zygoteshare.py",
        "test_a_command_in_flight_leaves_every_zygote_its_sends",
    ),
    # round 49 (sandbox9): the same split on the Python init's path
    ("test_redteam_round49_sandbox9_pyinitshare.py", "test_the_python_init_gives_its_commands_the_share"),
)


def test_they_hold_for_an_unprivileged_caller() -> None:
    """Failed before: 2 of 2 cases of each attack (session and per command)."""
    require(
        os.geteuid() == 0, "preparing a run as uid 65534 needs root (as non-root, run the tests directly)"
    )
    require(shutil.which("setpriv") is not None, "setpriv (util-linux)")
    collected, outcome = _nonroot.run_as_nobody(
        [f"tests/{name}::{test}" for name, test in _ATTACKS],
        collect_args=[f"{_HERE / name}::{test}" for name, test in _ATTACKS],
    )
    _nonroot.assert_all_held(collected, outcome)
