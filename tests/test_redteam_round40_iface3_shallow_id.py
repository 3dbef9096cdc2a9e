"""Red team, round 40 (iface3): finding the id of a refused line held the regex engine's stack.

A line refused unread (too many values, or, since round 40, too many characters) is answered
under its own ``id``, found by a shallow scan (`_shallow_id.leading_id`) that skipped each nested
string with the pattern ``"(?:[^"\\\\]|\\\\.)*"``: Python's regex engine keeps state per repeat of
an alternation, so a 20 MiB string cost ~860 MB and ~4 s to skip (three such lines: 2.6 GB of
``shellrt serve``). Strings are now skipped by ``str.find`` with a bounded walk of backslashes.
Run in a child interpreter, so its peak memory is its own.
"""

from __future__ import annotations

import json
import subprocess
import sys

from tests._mcp_support import ROOT

_PROBE = r"""
import json, resource, sys, time
from shellrt.server._shallow_id import leading_id
lines = [
    b'{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"arguments":{"a":"' + b"x" * 20_000_000 + b'"}}}',
    b'{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"arguments":{"a":"' + b'\\n' * 5_000_000 + b'"}}}',
    b'{"jsonrpc":"2.0","id":43,"params":{"a":"' + b'\\"' * 3_000_000 + b'"}}',
]
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # the lines themselves not counted
start = time.process_time()
ids = [leading_id(line) for line in lines]
spent = time.process_time() - start
grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024
print(json.dumps({"ids": ids, "grown": grown, "cpu": spent}))
"""


def test_a_refused_lines_id_is_found_in_bounded_memory_and_time() -> None:
    """Failed before: ~1.2 GB grown and seconds of CPU for three long strings."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, cwd=str(ROOT), timeout=300,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout)
    assert found["ids"] == [41, 42, 43], found
    assert found["grown"] < 64 * 1024 * 1024, f"finding three ids grew the process {found['grown']:,} bytes"
    assert found["cpu"] < 2.0, f"finding three ids took {found['cpu']:.2f} s of CPU"
