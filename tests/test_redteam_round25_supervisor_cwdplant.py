"""Red team, round 25: one command forges the working directory of the session's later commands.

A shell reports its final directory by writing ``$SHELLRT_CWD_FILE``, a file in the backend's
state directory, which bwrap commands can write (mode 1733: add files, not list them). Round 4
made the host read only a regular file there (no symlink, FIFO or hard link), but the names were
numbered (``cwd-1``, ``cwd-2`` ...): a command wrote regular files under the next numbers, and each
later command that did not ``cd`` itself (its shell writes no report then) "reported" the planted
directory. The session moved there and the result said "Working directory is now ..." for a
command that never changed directory; a background task can keep doing it for every later call.
Now each report's name carries a random part no other command can guess.
FAIL, not skip, under CI=true.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_redteam_round4_cwd import _run

# Regular files under the next numbers, each naming a directory inside the workspace.
_PLANT = (
    "mkdir -p evil; d=$(dirname \"$SHELLRT_CWD_FILE\"); b=$(basename \"$SHELLRT_CWD_FILE\"); "
    'n=$(printf %s "$b" | tr -cd 0-9); n=${n:-0}; '
    'for i in $(seq 1 12); do printf "%s\\n" "$PWD/evil" > "$d/cwd-$((n+i))"; done; echo planted'
)


@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
def test_a_planted_report_does_not_move_later_commands(tmp_path: Path, persistent: bool) -> None:
    results = _run(tmp_path, persistent, [_PLANT, "echo one", "pwd"])
    assert "planted" in results[0].preview, results[0].preview
    ws = str(tmp_path / "ws")
    assert [r.cwd_changed for r in results[1:]] == [False, False], [(r.cwd, r.cwd_note) for r in results]
    assert results[2].preview.strip() == ws, results[2].preview
