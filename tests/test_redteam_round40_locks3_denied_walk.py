"""Red team, round 40 (locks3): the walks of a read-denied directory missed a file renamed under them.

Round 39 (sockets, review10) made the alias search's walk of the writable roots check each listed
directory after the walk (`sandbox._maskaliases._settle`). The walks of a denied *directory* had no
such check: `denied_inodes` (what the file tools refuse to open by another name) and the alias
search's list of what lies below a denied directory (`AliasFinder._search`). A directory inside the
denied one renamed while it was walked (``mv d d2; mv d2 d`` in a loop: the host, a local-backend
command, another session with other rules) was listed under its old name, gone when its turn came,
and its files -- a file with another hard link in the workspace among them -- were not looked at:
the Read tool opened that link and the sandbox did not mask it; for an operator's denied directory
outside the roots, a session start did not mask it either (`unseen_links`). Root and uid 65534 (the
walk runs on the host as the caller).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox._maskaliases import AliasFinder, denied_inodes, stats_of, unseen_links
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
    _nonroot.held_as_nobody(
        __file__,
        "test_a_rename_inside_a_denied_directory_hides_no_linked_file",
        "test_a_rename_in_an_outside_denied_directory_at_the_start_leaves_no_link_unmasked",
    )


def _session_start(tmp_path: Path) -> tuple[int, int]:
    """The operator's denied directory outside the roots, renamed in at a session's start: the
    links of its files in the roots are masked from `unseen_links`' list only (round 38)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    secrets = tmp_path / "secrets"
    (secrets / "m" / "d").mkdir(parents=True)
    for k in range(30):
        (secrets / f"f{k}").mkdir()
        for n in range(100):
            (secrets / f"f{k}" / f"x{n}").touch()
    key = secrets / "m" / "d" / "key"
    key.write_text("")
    os.link(key, ws / "notes")
    renamer = subprocess.Popen(
        [sys.executable, "-c", _RENAMER, str(secrets)], stdout=subprocess.PIPE, text=True
    )
    assert renamer.stdout is not None and renamer.stdout.readline().strip() == "renaming"
    missed = refused = 0
    try:
        for _ in range(_TRIES):
            try:
                unseen, _cut, linked = unseen_links([secrets], [ws], [secrets])
            except SandboxExecError:
                refused += 1
                continue
            missed += ws / "notes" not in linked and not unseen
    finally:
        renamer.kill()
        renamer.wait()
    return missed, refused


def test_a_rename_in_an_outside_denied_directory_at_the_start_leaves_no_link_unmasked(tmp_path: Path) -> None:
    """Failed before: root 3 of 20 starts neither masked ``ws/notes`` nor refused."""
    missed, refused = _session_start(tmp_path)
    assert not missed, f"{missed} of {_TRIES} starts left the link unmasked ({refused} refused)"
    assert refused < _TRIES


def test_a_start_whose_denied_directory_keeps_changing_is_a_policy_refusal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The operator's directory outside the roots, still changing after three walks: the session
    refuses to start with a `PolicyError` saying what to do (not a walk cut short, nor a crash).
    Failed before: the policy was made, ``ws/notes`` not masked."""
    from sandbox import SandboxPolicy, _maskaliases
    from shellrt.permissions.rules import RuleOrigin, parse_rule
    from shellrt.runtime.sandbox_policy import PolicyError, derive_policy

    ws = tmp_path / "ws"
    ws.mkdir()
    secrets = tmp_path / "secrets"
    (secrets / "m").mkdir(parents=True)
    (secrets / "m" / "key").write_text("")
    os.link(secrets / "m" / "key", ws / "notes")

    def raced(*_args: object) -> object:
        raise _maskaliases._Raced(secrets / "m")
        yield  # a generator, as `_settle` is

    monkeypatch.setattr(_maskaliases, "_settle", raced)
    rule = parse_rule(f"Read(/{secrets}/**)", "deny", RuleOrigin("cli", None, None, ws))
    with pytest.raises(PolicyError, match="renaming"):
        derive_policy(SandboxPolicy(workspace=ws), rules=[rule], mask_defaults=False)


class _Entry:
    """A directory entry whose first ``stat`` fails, as it does when a directory above it was
    renamed between the listing and the ``stat`` (by path): the race above, made certain."""

    failed: set[str] = set()

    def __init__(self, entry: os.DirEntry[str]) -> None:
        self._entry = entry
        self.name, self.path = entry.name, entry.path

    def is_dir(self, *, follow_symlinks: bool = True) -> bool:
        return self._entry.is_dir(follow_symlinks=follow_symlinks)

    def is_file(self, *, follow_symlinks: bool = True) -> bool:
        return self._entry.is_file(follow_symlinks=follow_symlinks)

    def inode(self) -> int:
        return self._entry.inode()

    def stat(self, *, follow_symlinks: bool = True) -> os.stat_result:
        if self.name == "key" and self.path not in _Entry.failed:
            _Entry.failed.add(self.path)
            raise FileNotFoundError(self.path)
        return self._entry.stat(follow_symlinks=follow_symlinks)


def test_a_file_whose_stat_failed_after_its_listing_is_looked_at_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed before (with `_settle` on every walk): the key's directory kept its ctime (only a
    directory above it was renamed), so it was never listed again: missed 1 of 1 (and 1 of 20 in
    the race of `_session_start` once, under load)."""
    ws, secrets, link = _workspace(tmp_path)
    real = os.scandir
    _Entry.failed = set()
    monkeypatch.setattr(os, "scandir", lambda path: [_Entry(e) for e in real(path)])
    assert _file_tools(ws, secrets, link)
    assert _Entry.failed, "the failing stat was not met"
