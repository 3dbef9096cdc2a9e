"""Red team round 49 (hostread): the temp dir's "closed to the sandbox uid" check read "others" bits.

`sandbox._bwrap_tempreach.closed_to_others` (round 28) tells a root caller, before one bwrap per
command starts, that the sandbox uid cannot cross a directory on the way to the session's files
under ``TMPDIR``, and what to do. It read each directory's "other" bits only (round 48 perms8's
Left): a directory whose group is the sandbox uid's and closed to that group, or whose ACL closes
it to that uid, passed, and every command then failed in bwrap ("Can't find source path ...:
Permission denied") with the probe's wrong cause, "bubblewrap cannot create namespaces here".

Each layout is first shown closed to U by the kernel itself (a child switched to U); then the
check must name it, and a layout open to U must pass (control).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox._bwrap_tempreach import closed_to_others
from tests._acl import set_access_acl
from tests.conftest import require

U = 0x7E000149  # the operator's fixed sandbox uid (and gid)
_ANY = 0xFFFFFFFF
U_OBJ, USER, G_OBJ, MASK, OTHERS = 0x01, 0x02, 0x04, 0x10, 0x20


def _u_crosses(path: Path) -> bool:
    """The kernel's answer: may ``U`` (no other groups) look ``path`` up?"""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.setgroups([])
            os.setgid(U)
            os.setuid(U)
            os.stat(path)
            os._exit(0)
        except BaseException:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


@pytest.fixture
def top() -> Iterator[Path]:
    require(os.geteuid() == 0, "a root caller's one bwrap per command runs as the sandbox uid")
    where = Path(tempfile.mkdtemp(prefix="rt49-hostread-tmp-", dir="/var/tmp"))
    try:
        where.chmod(0o755)
        yield where
    finally:
        shutil.rmtree(where, ignore_errors=True)


def _layout(top: Path, case: str) -> Path:
    """``case`` made on the way to ``top/<case>/tmp`` (the TMPDIR); returns that TMPDIR."""
    way = top / case
    way.mkdir()
    tmp = way / "tmp"
    tmp.mkdir(mode=0o755)
    way.chmod(0o755)
    if case == "group-closed":
        os.chown(way, 0, U)
        way.chmod(0o705)  # the owning group (U's) gets ---, others r-x
    elif case == "acl-closed":
        set_access_acl(way, [(U_OBJ, 7, _ANY), (USER, 0, U), (G_OBJ, 5, _ANY), (MASK, 5, _ANY), (OTHERS, 5, _ANY)])
    elif case == "group-open":
        os.chown(way, 0, U)
        way.chmod(0o750)  # others ---, U's group r-x: U crosses (only U does)
    return tmp


@pytest.mark.parametrize("case", ["group-closed", "acl-closed"])
def test_a_way_closed_to_the_sandbox_uid_alone_is_named(top: Path, case: str) -> None:
    """Failed before: 2 of 2 (the check said None: "others" may cross)."""
    tmp = _layout(top, case)
    assert not _u_crosses(tmp), f"{case}: the layout is not closed to U; the test proves nothing"
    said = closed_to_others(tmp, (U, U))
    assert said is not None and str(tmp.parent) in said, (case, said)


def test_a_way_open_to_the_sandbox_uid_passes(top: Path) -> None:
    """Control: what the kernel lets U cross is not refused, by group as by "others"."""
    for case in ("plain", "group-open"):
        tmp = _layout(top, case)
        assert _u_crosses(tmp), case
        assert closed_to_others(tmp, (U, U)) is None, case
