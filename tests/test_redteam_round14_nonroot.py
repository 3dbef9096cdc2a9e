"""Red team round 14, the non-root caller: the round's bwrap and host-side probes run as uid 65534.

A non-root caller's commands keep its uid and its sandbox is built without root's tools (no
sized /tmp, no idmapped workspace): the kernel-surface filter, the relative-name socket masks,
the file tools' ACL/identity/name checks, the /tmp-cap refusal and the classifier's Bash-tool
runs must hold there too. A skip is a failure here (``CI=true``), and every test root collected
must run.
"""

from __future__ import annotations

import pytest

from tests import _nonroot
from tests.test_sandbox_escape_nonroot import _prerequisites

pytestmark = pytest.mark.bwrap

SELECTION = [
    "tests/test_redteam_round14_bwrap_kernel.py",
    "tests/test_redteam_round14_bwrap_relsock.py",
    "tests/test_redteam_round14_host_acl.py",
    "tests/test_redteam_round14_host_readcache.py",
    "tests/test_redteam_round14_host_linknames.py",
    "tests/test_left14_tmpcap_nonroot.py",
    "tests/test_redteam_round14_analysis_option_files.py",
    "tests/test_redteam_round14_analysis_path_lookup.py",
    "tests/test_redteam_round14_analysis_abbreviations.py",
    "tests/test_redteam_round14_analysis_env_chdir.py",
]


def test_round_14_probes_hold_for_an_unprivileged_caller() -> None:
    _prerequisites()
    collected, outcome = _nonroot.run_as_nobody(SELECTION, timeout=600)
    _nonroot.assert_all_held(collected, outcome)
