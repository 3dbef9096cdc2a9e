"""Red team, round 48 (perms8): what a root harness copies to the sandbox user, ACLs and groups included.

A root host copies a batch task's (or an Inspect sample's) workspace with root's reading rights
and hands the copy to the sandbox user. `sandbox._private_source.first_private` (the judgement
before the copy) and `sandbox._anchoredcopy._strangers_read` (asked again of what the copy opened)
read the mode's *other* bits only (round 47's Left): a file the host closes to one user alone --
an ACL ``u:U:---`` over a world-readable file, a 0604 file whose group is U's (the kernel gives a
member of the owning group the group bits, not the other ones), a directory an ACL closes to U --
was "readable by any user", and the copy handed U what the host denies it.

Each layout is first shown closed to U by the kernel itself (a child switched to U), then both
readings must refuse it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox._anchoredcopy import copy_tree
from sandbox._private_source import first_private, opened_as
from tests._acl import set_access_acl as _acl
from tests.conftest import require

U = 0x7E000148  # a uid (and gid) the host denies something to: the operator's fixed sandbox user
_ANY = 0xFFFFFFFF
U_OBJ, USER, G_OBJ, GROUP, MASK, OTHERS = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20
# the same rights for everyone but U
_CLOSED = [(U_OBJ, 7, _ANY), (USER, 0, U), (G_OBJ, 5, _ANY), (MASK, 5, _ANY), (OTHERS, 5, _ANY)]


def _u_reads(path: Path) -> bool:
    """The kernel's answer: may ``U`` (no other groups) open ``path`` (listing it, if a directory)?"""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.setgroups([])
            os.setgid(U)
            os.setuid(U)
            if path.is_dir():
                os.listdir(path)
            else:
                os.close(os.open(path, os.O_RDONLY))
            os._exit(0)
        except BaseException:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def _layout(src: Path, case: str) -> Path:
    """Make ``case`` in the (world-readable) source ``src``; return what U must not get."""
    if case == "acl-closes-file":
        secret = src / "k.pem"
        secret.write_text("SECRET48-COPY\n")
        secret.chmod(0o644)
        _acl(secret, [(e[0], e[1] & 6 if e[0] != U_OBJ else 6, e[2]) for e in _CLOSED])
        return secret
    if case == "group-closes-file":
        secret = src / "k.pem"
        secret.write_text("SECRET48-COPY\n")
        os.chown(secret, 0, U)
        secret.chmod(0o604)  # the owning group (U's) gets ---, others r--
        return secret
    if case == "acl-closes-dir":
        closed = src / "keys"
        closed.mkdir()
        (closed / "k.pem").write_text("SECRET48-COPY\n")
        (closed / "k.pem").chmod(0o644)
        closed.chmod(0o755)
        _acl(closed, _CLOSED)
        return closed
    raise AssertionError(case)


CASES = ["acl-closes-file", "group-closes-file", "acl-closes-dir"]


@pytest.fixture
def top() -> Iterator[Path]:
    require(os.geteuid() == 0, "a root harness copies what it reads as root")
    where = Path(tempfile.mkdtemp(prefix="rt48-perms8-copy-", dir="/var/tmp"))
    try:
        where.chmod(0o755)
        yield where
    finally:
        shutil.rmtree(where, ignore_errors=True)


def test_a_source_closed_to_one_user_is_private(top: Path) -> None:
    missed = []
    for case in CASES:
        src = top / case
        src.mkdir(mode=0o755)
        src.chmod(0o755)
        secret = _layout(src, case)
        assert not _u_reads(secret), f"{case}: the layout is not closed to U"
        if first_private(src) is None:
            missed.append(case)
    assert not missed, f"judged readable by any user, though the host closes them to U: {missed}"


def test_a_copy_refuses_what_became_closed_to_one_user_after_the_judgement(top: Path) -> None:
    copied = []
    for case in CASES:
        src = top / case
        src.mkdir(mode=0o755)
        src.chmod(0o755)
        assert first_private(src) is None
        identity = opened_as(str(src))
        secret = _layout(src, case)  # after the judgement: as a swap or a chmod would
        assert not _u_reads(secret)
        dest = top / f"{case}.copy"
        try:
            copy_tree(str(src), str(dest), identity=identity, owner=(U, U))
        except PermissionError as exc:
            assert "not copied" in str(exc)
        else:
            copied.append(case)
    assert not copied, f"copied to U though the host closes them to U: {copied}"
