"""Red team, round 40 (locks3): the walks of a read-denied directory missed a file renamed under them.

Round 39 (sockets, review10) made the alias search's walk of the writable roots check each listed
directory after the walk (`sandbox._maskaliases._settle`). The walks of a denied *directory* had no
such check: `denied_inodes` (what the file tools refuse to open by another name) and the alias
search's list of what lies below a denied directory (`AliasFinder._search`). A directory inside the
denied one renamed while it was walked (``mv d d2; mv d2 d`` in a loop: the host, a local-backend
command, another session with other rules) was listed under its old name, gone when its turn came,
and its files -- a file with another hard link in the workspace among them -- were not looked at:
the Read tool opened that link and the sandbox did not mask it. Root and uid 65534 (the walk runs
on the host as the caller).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox._maskaliases import AliasFinder, denied_inodes, stats_of
from sandbox.errors import SandboxExecError
from tests import _nonroot

_RENAMER = """
import os, sys
os.chdir(sys.argv[1])
print("renaming", flush=True)
while True:
    os.rename("m", "m2")
    os.rename("m2", "m")
"""

_TRIES = 20


def _workspace(tmp_path: Path) -> tuple[Path, Path, Path]:
    ws = tmp_path / "ws"
    secrets = ws / "secrets"
    (secrets / "m" / "d").mkdir(parents=True)
    for k in range(30):  # the rest of the denied directory: the walk's time
        (secrets / f"f{k}").mkdir()
        for n in range(100):
            (secrets / f"f{k}" / f"x{n}").touch()
    key = secrets / "m" / "d" / "key"
    key.write_text("")
    link = ws / "notes"
    os.link(key, link)  # made before the directory was denied
    return ws, secrets, link


def _race(tmp_path: Path, look: object) -> tuple[int, int]:
    ws, secrets, link = _workspace(tmp_path)
    renamer = subprocess.Popen(
        [sys.executable, "-c", _RENAMER, str(secrets)], stdout=subprocess.PIPE, text=True
    )
    assert renamer.stdout is not None and renamer.stdout.readline().strip() == "renaming"
    missed = refused = 0
    try:
        for _ in range(_TRIES):
            try:
                seen = look(ws, secrets, link)  # type: ignore[operator]
            except SandboxExecError:
                refused += 1  # fail closed: allowed, counted
                continue
            missed += not seen
    finally:
        renamer.kill()
        renamer.wait()
    return missed, refused


def _file_tools(ws: Path, secrets: Path, link: Path) -> bool:
    st = os.stat(link)
    return (st.st_dev, st.st_ino) in denied_inodes([(str(secrets), str(secrets))], [str(ws)])


def _sandbox(ws: Path, secrets: Path, link: Path) -> bool:
    finder = AliasFinder()  # each a first search: a session's start
    return link in finder.aliases([secrets], stats_of([secrets]), [ws])


@pytest.mark.parametrize("look", [_file_tools, _sandbox], ids=["denied_inodes", "alias_search"])
def test_a_rename_inside_a_denied_directory_hides_no_linked_file(tmp_path: Path, look: object) -> None:
    """Failed before: root denied_inodes 9 of 20 missed, alias_search 11 of 20."""
    missed, refused = _race(tmp_path, look)
    assert not missed, f"{missed} of {_TRIES} walks missed the linked file ({refused} refused)"
    assert refused < _TRIES, "every walk refused: a rename loop must not be needed to be stopped each time"


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(__file__, "test_a_rename_inside_a_denied_directory_hides_no_linked_file")
