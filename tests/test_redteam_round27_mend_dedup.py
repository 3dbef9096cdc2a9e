"""Round 27 (mend): code two places held in copies, now one; the copy's untested path tested.

`WorkspaceGuard.command_starts` (a command may write from now: the baseline marked dirty and
recorded in flight, or the operator told why it could not be) was written out in
`shellrt.supervisor.protect.CommandGuard.before` and in the lean ``shellrt run``'s
`shellrt.cli._local_guard`. No test reached the note.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from shellrt.supervisor.protect import WorkspaceGuard


class _Record:
    def __init__(self, fails: bool) -> None:
        self.fails, self.written = fails, 0

    def in_flight(self, key: object, baseline: Any) -> None:
        if self.fails:
            raise OSError(28, "No space left on device")
        self.written += 1


def test_a_command_start_marks_the_baseline_dirty_and_records_it_or_says_why_not(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    guard = WorkspaceGuard(tmp_path / "ws", tmp_path / "session", use_inotify=False)
    ok, broken = _Record(fails=False), _Record(fails=True)
    assert guard.command_starts(ok) == [] and ok.written == 1 and guard.dirty  # type: ignore[arg-type]
    guard.dirty = False
    notes = guard.command_starts(broken)  # type: ignore[arg-type]
    assert guard.dirty and len(notes) == 1, notes
    assert "No space left on device" in notes[0] and "will not be reverted by the next session" in notes[0]
