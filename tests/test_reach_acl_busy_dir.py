"""A directory whose entries churn still has a readable ACL (CI, stop 59 of the harness).

Every file made or removed in a directory changes the directory's change time. `sandbox._reach.acl_of`
(round 48) re-stats the name after reading the ACL, so that a rename between the caller's ``stat`` and
the read cannot pair one inode's key with another's ACL, and it took any change of ``st_ctime`` for
"unknown" (None). The host's ``/tmp`` changes all the time: a root caller's per-command bwrap start then
failed with "cannot read the ACL of /tmp, on the way to this session's files" (2 of 150 starts while a
host thread made and removed sockets there; here, 759 of 84,640 reads and 929 start checks in 1.5 s
each, on the unfixed tree), and the file tools refused a path below a busy directory.

Now the re-stat must name the same inode with the same mode and owner; the ACL read is then that
inode's, current with the caller's mode bits. It is kept in the cache only when the change time did
not move, and a rename or a chmod in between is still "unknown".
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from sandbox import _reach
from sandbox._bwrap_tempreach import closed_to_others
from sandbox._reach import acl_of
from tests._acl import set_access_acl

#: How long each busy loop runs: the kernel stamps change times at its clock tick (4 ms here), so
#: a read loses the race only when a tick falls between its two stats; a second covers ~250 ticks.
BUSY_S = 1.5


@pytest.fixture
def crossable() -> Iterator[Path]:
    """A directory every uid can cross, down from ``/`` (pytest's own tmp_path is below a 0700 one)."""
    place = Path(tempfile.mkdtemp(prefix="shellrt-busy-", dir="/var/tmp"))
    place.chmod(0o755)
    try:
        yield place
    finally:
        shutil.rmtree(place)


_U_OBJ, _USER, _G_OBJ, _MASK, _OTHER = 0x01, 0x02, 0x04, 0x10, 0x20
_CHURN = "import os,sys\np=os.path.join(sys.argv[1],'f')\nwhile True:\n open(p,'w').close(); os.unlink(p)\n"


@contextmanager
def busy(directory: Path) -> Iterator[set[int]]:
    """Another process making and removing a file in ``directory`` until the block ends (a host
    program on another core, as the CI's socket churn was); yields a set the caller fills with the
    directory's change times it saw, to show the churn ran alongside."""
    seen: set[int] = set()
    churn = subprocess.Popen([sys.executable, "-c", _CHURN, str(directory)])
    try:
        deadline = time.monotonic() + 10
        while not (directory / "f").exists() and time.monotonic() < deadline:
            time.sleep(0.001)
        yield seen
    finally:
        churn.kill()
        churn.wait()


def test_the_acl_of_a_busy_directory_is_read(tmp_path: Path) -> None:
    place = tmp_path / "busy"
    place.mkdir(mode=0o775)
    set_access_acl(place, [(_U_OBJ, 7, 0xFFFFFFFF), (_USER, 5, 4242), (_G_OBJ, 5, 0xFFFFFFFF),
                           (_MASK, 5, 0xFFFFFFFF), (_OTHER, 5, 0xFFFFFFFF)])
    unknown = reads = 0
    with busy(place) as seen:
        end = time.monotonic() + BUSY_S
        while time.monotonic() < end:
            _reach._cache.clear()
            st = os.stat(place)
            seen.add(st.st_ctime_ns)
            acl = acl_of(place, follow=True, st=st)
            reads += 1
            if acl is None:
                unknown += 1
            else:
                assert (_USER, 5, 4242) in acl
    assert len(seen) > 50  # the churn really ran alongside, across ticks
    assert unknown == 0, f"{unknown} of {reads} reads of a busy directory's ACL were 'unknown'"


def test_a_busy_temp_dir_is_not_reported_closed(crossable: Path) -> None:
    """The start's check on the way to the session's files (`closed_to_others`), as in CI."""
    place = crossable / "tmp"
    place.mkdir(mode=0o1777)
    place.chmod(0o1777)
    assert closed_to_others(place, (4242, 4242)) is None  # open to the uid when nothing churns
    refusals: list[str] = []
    with busy(place) as seen:
        end = time.monotonic() + BUSY_S
        while time.monotonic() < end:
            _reach._cache.clear()
            seen.add(os.stat(place).st_ctime_ns)
            said = closed_to_others(place, (4242, 4242))
            if said is not None:
                refusals.append(said)
    assert len(seen) > 50
    assert refusals == [], f"{len(refusals)} refusals, e.g. {refusals[:1]}"


def test_a_chmod_between_the_stat_and_the_read_is_unknown(tmp_path: Path) -> None:
    """The caller's mode bits no longer go with the ACL read: fail closed (None), and keep nothing."""
    place = tmp_path / "moved"
    place.mkdir(mode=0o775)
    st = os.stat(place)
    place.chmod(0o700)
    _reach._cache.clear()
    assert acl_of(place, follow=True, st=st) is None
    assert _reach._cache == {}


def test_another_inode_at_the_name_is_unknown(tmp_path: Path) -> None:
    place = tmp_path / "swapped"
    place.mkdir(mode=0o775)
    st = os.stat(place)
    place.rename(tmp_path / "aside")
    (tmp_path / "swapped").mkdir(mode=0o775)
    _reach._cache.clear()
    assert acl_of(place, follow=True, st=st) is None
    assert _reach._cache == {}


def test_a_changed_directory_is_read_but_not_kept(tmp_path: Path) -> None:
    """An entry made between the stat and the read moves the change time: the ACL is returned (same
    inode, mode and owner) but not kept under the caller's key, whose time is stale."""
    place = tmp_path / "touched"
    place.mkdir(mode=0o775)
    st = os.stat(place)
    time.sleep(0.02)  # past a coarse clock's tick
    (place / "new").touch()
    assert os.stat(place).st_ctime_ns != st.st_ctime_ns
    _reach._cache.clear()
    assert acl_of(place, follow=True, st=st) == acl_of(place, follow=True, st=os.stat(place))
    assert acl_of(place, follow=True, st=st) is not None
    assert list(_reach._cache) == [(st.st_dev, st.st_ino, os.stat(place).st_ctime_ns)]  # only the fresh key
