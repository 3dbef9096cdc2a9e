"""Red team, round 25: the cwd-report directory as a way around the session's /tmp cap.

As root, a bwrap session's /tmp is a tmpfs of ``tmp_bytes`` (round 13: uncapped, a command filled
the host's disk, or its memory where the host's /tmp is a tmpfs). The directory the shells write
their cwd reports to (``$SHELLRT_CWD_FILE``'s, mode 1733) is bound writable at its host path in
the host's temp dir, inside the sandbox's /tmp: a command wrote as much as it liked there, on the
host's /tmp file system, past the cap (and it stayed until the session closed). Now, as root, the
reports live on a tmpfs of their own, a few hundred KiB. A cd is still tracked after a fill that
was removed. FAIL, not skip, under CI=true.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.test_redteam_round4_cwd import _run

_MIB = 1 << 20
# 16 MiB into the report directory (a cap of 1 MiB on the session's /tmp would refuse it too).
_FILL = (
    'd=$(dirname "$SHELLRT_CWD_FILE"); head -c 16777216 /dev/zero > "$d/fill" 2>/dev/null; '
    'echo "size=$(stat -c %s "$d/fill" 2>/dev/null || echo 0)"; rm -f "$d/fill"'
)


@pytest.mark.skipif(os.geteuid() != 0, reason="the /tmp cap is a root caller's (non-root: TMPDIR bounds it)")
@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
def test_the_report_directory_is_capped(tmp_path: Path, persistent: bool) -> None:
    (tmp_path / "ws" / "sub").mkdir(parents=True)
    results = _run(tmp_path, persistent, [_FILL, "cd sub", "pwd"])
    size = int(results[0].preview.split("size=")[1].split()[0])
    assert size < _MIB, f"{size} bytes written to the host's temp dir past the /tmp cap"
    assert results[2].preview.strip() == str(tmp_path / "ws" / "sub"), results[2].preview
