"""Red team, round 31 (mend): an MCP server flooded the operator's terminal through its stderr.

Round 30 escaped a stdio server's stderr (no session log directory: it is shown on ours), but every
line was shown as fast as the server wrote it, however long, and without saying whose it was: a
server (or a package it runs) held the terminal, buried shellrt's own lines, and could pass its
lines off as shellrt's. A real server process writes one 100 000-character line and 3 000 short
ones before it serves; this process's fd 2 is read as the terminal would get it.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from shellrt.tools.mcp._stderr_tty import LINE_CAP, LINES_BURST, LINES_PER_SECOND
from tests._mcp_tiny_server import serve_tiny, stderr_until

_LINES = 3000

#: The flood the server writes on its fd 2 before it serves.
_FLOOD = f"""
import os
os.write(2, b"A" * 100000 + b"\\n")
os.write(2, b"".join(b"flood %d\\n" % i for i in range({_LINES})))
"""


def test_a_flooding_servers_stderr_is_named_capped_and_rate_limited(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Failed before (1 of 1: 3 001 unprefixed lines, the long one whole). Now each shown line
    starts with the server's name, the long line is cut at `LINE_CAP` characters, at most a
    burst (plus the steady rate) of lines is shown and the rest is counted in one summary line."""
    capfd.readouterr()
    started = time.monotonic()
    assert serve_tiny(tmp_path, "flood-srv", _FLOOD) == 1
    err = stderr_until(capfd, lambda err: _accounted(err) >= _LINES or "flood 2999" in err)
    elapsed = time.monotonic() - started
    lines = err.splitlines()
    ours = [line for line in lines if "flood " in line or "AAAA" in line or "lines dropped" in line]
    prefix = "[mcp flood-srv] "
    assert ours and all(line.startswith(prefix) for line in ours), ours[:3]
    long_line = next(line for line in ours if "AAAA" in line)
    assert long_line == f"{prefix}{'A' * LINE_CAP} [{100000 - LINE_CAP} more characters not shown]"
    shown = [line for line in ours if "flood " in line]
    assert len(shown) + 1 <= LINES_BURST + LINES_PER_SECOND * elapsed + 1, (len(shown), elapsed)
    assert _accounted(err) == _LINES, (len(shown), err[-300:])


def _accounted(err: str) -> int:
    """Short lines shown plus those counted as dropped."""
    shown = sum(1 for line in err.splitlines() if "] flood " in line or line.startswith("flood "))
    return shown + sum(int(m) for m in re.findall(r"\[(\d+) lines dropped", err))
