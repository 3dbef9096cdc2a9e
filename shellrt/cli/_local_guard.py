"""The protected-files check around the lean ``shellrt run``'s one command, without an event loop.

The same steps as `shellrt.supervisor.protect.CommandGuard` takes for a session
that runs a single foreground command, on the same `WorkspaceGuard` and
in-flight record: first revert what a killed shellrt's command left planted
(its record names the baseline), accept the workspace as it is (the operator's),
record the baseline while the command may run, revert what the command planted
after it, and at the end (also after a signal) revert anything still pending and
remove the record. Scans run inline: nothing else runs alongside.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from shellrt.supervisor._inflight import InflightRecord, orphaned_records
from shellrt.supervisor.protect import WorkspaceGuard

__all__ = ["LocalGuard"]


class LocalGuard:
    """`before` and `after` the command, then `final` (always), over every writable root
    (``--writable DIR``: as the full path's `RootGuards`)."""

    def __init__(
        self, workspace: Path, session_dir: Path, writable: Sequence[Path] = (), write_deny: Any = None
    ) -> None:
        # ``write_deny``: the settings' Edit/Write deny globs (`shellrt.cli._run_write_deny`), round 16.
        # The files a later session obeys outside the workspace's own settings (the trust store, the
        # saved rules' anchors, MCP pins, managed and user settings) are guarded in the root that
        # holds them, as the full path's `Supervisor` does: round 45 found them handed on only with
        # ``--writable`` or a write-deny rule, so a command run with the home directory as the
        # workspace kept the trust store it wrote (`trust_paths` is the light module made for this).
        from shellrt.permissions.trust_paths import later_session_files
        from shellrt.supervisor.protect_roots import root_guards

        guards = root_guards([workspace, *writable], session_dir, later_session_files(), write_deny) or [
            WorkspaceGuard(workspace, session_dir, write_deny=write_deny)
        ]
        self._roots = [_RootGuard(guard) for guard in guards]

    def before(self, reading: Callable[[], AbstractContextManager[object]] = contextlib.nullcontext) -> None:
        """``reading``: wraps each root's baseline walk, which only reads (`shellrt.cli._local_run`
        lets a signal cut it short there: a large tree took minutes, deaf to Ctrl-C and SIGTERM)."""
        for root in self._roots:
            root.before(reading)

    def after(self) -> list[str]:
        """Revert what the command planted; the notes for the operator."""
        return [note for root in self._roots for note in root.after()]

    def final(self) -> None:
        for root in self._roots:
            root.final()


class _RootGuard:
    """One root's steps."""

    def __init__(self, guard: WorkspaceGuard) -> None:
        self.guard = guard
        self._record = InflightRecord(guard.root)
        self._pending: list[str] = []

    def before(self, reading: Callable[[], AbstractContextManager[object]]) -> None:
        self._recover()
        with reading():
            self._pending += self.guard.scan(revert=False, culprit="this command")
        self._pending += self.guard.command_starts(self._record)

    def after(self) -> list[str]:
        """Revert what the command planted; the notes for the operator."""
        self._pending += self.guard.scan(revert=True, culprit="this command")
        self.guard.dirty = False
        self._record.checked()
        notes, self._pending = self._pending, []
        return notes

    def final(self) -> None:
        """After `after`, or instead of it when the run was cut short (a signal): nothing left pending."""
        if self.guard.dirty:
            self.guard.scan(revert=True, culprit="a background task of this session")
        self._record.clear()
        self.guard.close()

    def _recover(self) -> None:
        """Check against the oldest record of a dead owner (a shellrt killed before its check)."""
        records = orphaned_records(self.guard.root)
        if not records:
            return
        path, baseline = records[0]
        culprit = f"a command of an earlier shellrt (pid {path.name.split('.')[1]}, killed before its check)"
        self._pending += self.guard.recover(baseline, culprit)
        for stale, _ in records:
            try:
                os.unlink(stale)
            except OSError:
                pass
