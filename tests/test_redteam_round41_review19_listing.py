"""Red team, round 41 (review19): a start's look grew with every session of the uid.

Since the landing pass a session keeps its registry entry from its first start to its close, and
each start looked for hooks by listing the whole registry: every live session's entry, idle or
not, of every shellrt process of the uid. Beside 2,000 sessions (a batch harness, an MCP server
with many sessions) a start's look cost ~0.6 ms CPU against ~2 us. Hooks' entries now live in a
directory of their own, which a start lists.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: In a private /run (root's registry): a start's look alone, then beside 2,000 kept session
#: entries (min of 5 x 100 looks each); prints both in microseconds.
_LOOKS = textwrap.dedent(
    """
    import time
    from shellrt.supervisor import _host_pause_peers as p

    def look_us():
        best = float("inf")
        for _ in range(5):
            c0 = time.process_time()
            for _ in range(100):
                p.others_live("h", lambda roots: True, p.registry())
            best = min(best, (time.process_time() - c0) / 100 * 1e6)
        return best

    alone = look_us()
    kept = [p.announce("b", (f"/nonexistent-r41-{n}",)) for n in range(2000)]
    for entry in kept:
        entry.release()  # idle sessions: kept, unlocked
    print(f"{alone:.1f} {look_us():.1f}")
    """
)


def test_a_start_looks_at_hooks_only() -> None:
    """Failed before: the look beside 2,000 idle sessions cost ~100-250 times the look alone."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.fail("needs root and unshare(1) for a private /run (CI runs as root)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *(p for p in sys.path if p)])}
    script = f'mount -t tmpfs -o mode=755 none /run && exec {sys.executable} -c "$0"'
    done = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", script, _LOOKS],
        capture_output=True, text=True, env=env, cwd="/", timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    alone, beside = map(float, done.stdout.split())
    assert beside < max(5 * alone, 50.0), f"a start's look: {alone} us alone, {beside} us beside 2,000 sessions"
