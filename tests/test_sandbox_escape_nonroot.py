"""The bwrap escape suite run by an unprivileged caller (issue 15, item 6): uid 65534, for real.

CI runs as root, where every bwrap command runs under the dedicated sandbox uid.
A non-root caller takes another path (``--unshare-user``, commands keep its uid,
no session cgroup, its own files and processes next to the sandbox), and the
promises docs/security.md makes to it are only true if they are tested as such a
caller. This root test prepares the system interpreter's view of the repository and
its packages (`tests._nonroot`) and runs the bwrap attack tests as uid 65534:
every one must pass -- a skip is a failure (the run has ``CI=true``, and the count
of passed tests must equal what root collected).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from sandbox._bwrap_retry import lost_mount_race
from tests import _nonroot
from tests.conftest import require

pytestmark = pytest.mark.bwrap

#: The bwrap attack tests, run as the unprivileged caller.
SELECTION = [
    "tests/test_sandbox_escape_bwrap.py",
    "tests/test_redteam_sandbox.py",
    "tests/test_redteam_round10b_bwrap_kernel.py",
    "tests/test_protected_paths.py::test_bwrap_plants_are_reverted",
    "tests/test_sandbox_policy_derivation.py::test_bash_cannot_read_what_read_may_not_even_in_bypass",
    "tests/test_sandbox_policy_derivation.py::test_settings_sandbox_section_masks_more",
]
#: Session-cgroup tests: a non-root caller without a delegated cgroup gets none. That such a caller's
#: limits are refused (never ignored) is test_sandbox_escape_bwrap's test_limits_are_enforced_or_refused.
NEEDS_A_SESSION_CGROUP = [
    "tests/test_redteam_sandbox.py::test_session_recovers_after_its_pids_are_used_up",
    "tests/test_redteam_sandbox.py::test_used_up_pids_are_reported_as_such",
    "tests/test_redteam_sandbox.py::test_a_command_cannot_touch_its_cgroup",
]
ARGS = [*SELECTION, *(arg for node in NEEDS_A_SESSION_CGROUP for arg in ("--deselect", node))]


def _prerequisites() -> None:
    require(
        os.geteuid() == 0,
        "preparing a run as uid 65534 needs root (as non-root, run the bwrap tests directly)",
    )
    for program in ("setpriv", "bwrap"):
        require(shutil.which(program) is not None, f"{program} is not installed")
    require(os.access(_nonroot.SYSTEM_PYTHON, os.X_OK), f"no system interpreter at {_nonroot.SYSTEM_PYTHON}")
    version = subprocess.run(
        [_nonroot.SYSTEM_PYTHON, "-c", "import sys; print(*sys.version_info[:2])"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split()
    require(
        version == [str(n) for n in sys.version_info[:2]],
        f"{_nonroot.SYSTEM_PYTHON} is Python {'.'.join(version)}, not {sys.version_info[0]}.{sys.version_info[1]}: "
        "the packages' extension modules would not load there",
    )
    argv = [*_nonroot.NonRootRun.argv_for("bwrap"), "--unshare-all", "--ro-bind", "/", "/"]
    argv += ["--proc", "/proc", "--dev", "/dev", "true"]
    for _ in range(4):  # a host mount that went away during its `--ro-bind / /` (another session's
        # sized /tmp, unmounted at its close) fails one start: shellrt retries those too (CI114)
        probe = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False, cwd="/")
        if probe.returncode == 0 or not lost_mount_race(probe.stderr):
            break
    require(probe.returncode == 0, f"uid 65534 cannot make a bwrap sandbox here: {probe.stderr.strip()}")


def test_the_bwrap_escape_suite_holds_for_an_unprivileged_caller() -> None:
    _prerequisites()
    collected = _nonroot.root_view(ARGS)
    assert collected.items >= len(SELECTION), collected
    with _nonroot.shared_run(_nonroot.with_requirements(collected.distributions)) as run:
        # The in-place build's extension modules (when there is one) load for the system interpreter.
        from shellrt.analysis.compiled import is_compiled

        ours = is_compiled()
        theirs = run.python(
            "import os; from shellrt.analysis.compiled import is_compiled; print(is_compiled(), os.getuid())"
        )
        assert theirs.stdout.split() == [str(ours), str(_nonroot.NOBODY)], theirs.stderr
        outcome = run.pytest(ARGS, timeout=600)
    _nonroot.assert_all_held(collected, outcome)
