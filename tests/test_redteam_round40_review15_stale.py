"""Red team, round 40 (review15): a half-made entry in the peers' registry is never removed.

`_host_pause_peers.announce` writes an entry under a dot name, locks it and renames it in. A process
killed before the rename left the dot file for ever: no look removed it (it never read dot names),
and each counted toward `MAX_ENTRIES`, past which every hook of the uid is refused.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from shellrt.supervisor import _host_pause_peers as peers
from tests import _nonroot

ROOT = Path(__file__).resolve().parents[1]

#: Dies by SIGKILL in the middle of an announce (just before its rename); prints the dot file.
_KILLED = textwrap.dedent(
    """
    import os, signal
    from shellrt.supervisor import _host_pause_peers as p
    def rename(src, dst):
        print(src, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    p.os.rename = rename
    p.announce("b", ("/nonexistent-r15",))
    """
)


def test_a_half_made_entry_of_a_dead_process_is_removed() -> None:
    """Failed before: the dot file stayed after any number of looks."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *(p for p in sys.path if p)])}
    done = subprocess.run([sys.executable, "-c", _KILLED], capture_output=True, text=True, env=env, cwd="/")
    temp = done.stdout.strip()
    assert os.path.basename(temp).startswith(".b-"), (done.stdout, done.stderr[-2000:])
    try:
        old = time.time() - 3600
        os.utime(temp, (old, old))  # its process died an hour ago
        peers.others_live("b", lambda roots: False)
        assert not os.path.exists(temp), "a dead process's half-made entry stayed in the registry"
    finally:
        if os.path.exists(temp):
            os.unlink(temp)


def test_a_fresh_one_is_left_to_its_maker() -> None:
    """Held: one just made (its process may be between its create and its lock) is not removed, and
    an announce still succeeds beside it."""
    temp = os.path.join(peers.registry(), f".b-r15fresh-{os.getpid()}-1")
    with open(temp, "w"):
        pass
    try:
        peers.others_live("b", lambda roots: False)
        assert os.path.exists(temp)
        peers.announce("b", ("/nonexistent-r15",)).withdraw()
    finally:
        os.unlink(temp)


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(
        __file__, "test_a_half_made_entry_of_a_dead_process_is_removed", "test_a_fresh_one_is_left_to_its_maker"
    )
