"""Red team, round 39 (sockets): a directory renamed during the alias search hid a read-denied file's link.

`sandbox._maskaliases.AliasFinder` walks the writable roots for the other names of a read-denied
file with more than one link (a command can ``touch .env; ln .env d/notes`` before the operator
writes the secret into ``.env`` in place: round 36). The walk lists a directory, then opens each
subdirectory it found by name: one renamed in between (``FileNotFoundError``) was skipped, and one
moved from a part not walked yet into a part walked already was never seen. A command of the
session still running (its background loop ``mv d d2; mv d2 d``) made the search at the next start
miss ``d/notes``: the mask plan hid ``.env`` and left the link readable, and nothing counted it
(the link count had not grown since the start). Now a walk that raced a change (a directory gone
before it was listed, or any directory walked whose times changed by the end) is walked again, and
after three such walks the command is refused (kept a second, as a short count is). Root and uid
65534 (the search runs on the host as the caller).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox._maskaliases import AliasFinder, stats_of
from sandbox.errors import SandboxExecError
from tests import _nonroot

#: Renames ``d`` to ``d2`` and back as fast as it can (a command's background loop).
_RENAMER = """
import os, sys
os.chdir(sys.argv[1])
print("renaming", flush=True)
while True:
    try:
        os.rename("d", "d2")
        os.rename("d2", "d")
    except OSError:
        pass
"""


def test_a_renamed_directory_never_hides_a_link_of_a_denied_file(tmp_path: Path) -> None:
    """Failed before: the search returned no alias (root 1 of 1, uid 65534 1 of 1)."""
    ws = tmp_path / "ws"
    (ws / "d").mkdir(parents=True)
    for n in range(3000):  # a repository's files: the time between listing ws and opening d
        (ws / f"f{n}").touch()
    secret = ws / ".env"
    secret.write_text("")
    os.link(secret, ws / "d" / "notes")
    renamer = subprocess.Popen([sys.executable, "-c", _RENAMER, str(ws)], stdout=subprocess.PIPE, text=True)
    assert renamer.stdout is not None and renamer.stdout.readline().strip() == "renaming"
    missed = refused = 0
    try:
        for _ in range(20):
            finder = AliasFinder(count_outside=True)  # each a first search: a session's start
            try:
                found = finder.aliases([secret], stats_of([secret]), [ws])
            except SandboxExecError as exc:
                assert "changed while" in str(exc), exc
                refused += 1
                continue
            if not any(p.name == "notes" for p in found):
                missed += 1
    finally:
        renamer.kill()
        renamer.wait()
    assert missed == 0, f"{missed} of 20 searches missed d/notes ({refused} refused)"


def test_a_quiet_root_is_searched_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the retry costs when nothing changes: one walk."""
    ws = tmp_path / "ws"
    (ws / "d").mkdir(parents=True)
    secret = ws / ".env"
    secret.write_text("")
    os.link(secret, ws / "d" / "notes")
    finder = AliasFinder(count_outside=True)
    walks: list[int] = []
    real = finder._search

    def counted(*args: object) -> tuple[Path, ...]:
        walks.append(1)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(finder, "_search", counted)
    assert finder.aliases([secret], stats_of([secret]), [ws]) == (ws / "d" / "notes",)
    assert len(walks) == 1


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(__file__, "test_a_renamed_directory_never_hides_a_link_of_a_denied_file")
