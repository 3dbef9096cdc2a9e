"""Red team round 46 (review26, second reader of round 45 perms6): an ACL whose mask is empty.

Round 45 reads a place's POSIX ACL as ``posix_acl_permission`` does, to skip the mask (a mount
whose name commands see) over a place a fixed ``sandbox_uid`` U cannot reach. But the kernel
consults the ACL only when the mode's group bits -- the ACL's mask -- are not all clear
(``acl_permission_check``: ``IS_POSIXACL(inode) && (mode & S_IRWXG)``); with a mask ``---``
(``chmod 705`` on a directory that has an ACL) every uid but the owner gets the mode's "other"
bits, whatever a named entry says. Round 45 read ``u:U:rwx`` with mask ``---`` as "U gets
nothing": the operator's ``Read(//srv/d/key)`` became a diagnostic, no mask was made, and U read
the file in the sandbox.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import shellrt
from sandbox import BwrapConfig, SandboxPolicy
from sandbox._uid_lease import DEFAULT_POOL_SIZE, DEFAULT_POOL_START, lease_uid
from shellrt.permissions.rules import RuleOrigin, parse_rule
from shellrt.runtime.sandbox_policy import _others_reach, derive_policy
from tests._acl import set_access_acl as _acl
from tests._calls import block_text, one_call
from tests.conftest import require

SPARE = DEFAULT_POOL_START + DEFAULT_POOL_SIZE + 470  # beside rounds 43/45's spares (+430, +450)
_ANY = 0xFFFFFFFF
NAME = "key-46.pem"


def _reads_as(uid: int, path: Path) -> bool:
    """Whether ``uid`` (its gid the same, no other groups) can read ``path``: the kernel's answer."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            os.close(os.open(path, os.O_RDONLY))
            os._exit(0)
        except OSError:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


@pytest.fixture
def top() -> Iterator[tuple[Path, int]]:
    require(os.geteuid() == 0, "a root caller's host judges what its sandbox uid can reach")
    held = lease_uid(SPARE, 8, widen="-")
    base = Path(tempfile.mkdtemp(prefix="rt46-review26-acl-", dir="/var/tmp"))
    try:
        base.chmod(0o755)
        (base / "ws" / ".claude").mkdir(parents=True)
        (base / "ws").chmod(0o777)
        for name in ("masked", "closed"):
            (base / name).mkdir()
            (base / name / NAME).write_text("SECRET46-ACL\n")
            (base / name / NAME).chmod(0o644)
        # mask ---: the kernel skips the ACL, U gets "other" r-x (the named entries say nothing)
        _acl(base / "masked", [(0x01, 7, _ANY), (0x02, 0, held.uid), (0x04, 0, _ANY), (0x10, 0, _ANY), (0x20, 5, _ANY)])
        # the control: the same with mask r-x: the ACL is read, u:U:--- closes it
        _acl(base / "closed", [(0x01, 7, _ANY), (0x02, 0, held.uid), (0x04, 5, _ANY), (0x10, 5, _ANY), (0x20, 5, _ANY)])
        (base / "ws" / "r.sh").write_text(f"cat {base}/masked/{NAME}\n")
        yield base, held.uid
    finally:
        shutil.rmtree(base, ignore_errors=True)
        held.release()


def test_an_empty_mask_is_judged_as_the_kernel_does(top: tuple[Path, int]) -> None:
    """Failed before: ``_others_reach`` said U cannot reach what U reads."""
    base, uid = top
    for where in ("masked", "closed"):
        path = base / where / NAME
        assert _others_reach(path, (uid, uid)) == _reads_as(uid, path), where
    assert _reads_as(uid, base / "masked" / NAME), "the premise: the kernel lets U read it"


def test_the_operators_rule_over_it_is_masked(top: tuple[Path, int]) -> None:
    """Failed before: a diagnostic ("cannot reach"), no mask."""
    base, uid = top
    ws = base / "ws"
    rule = parse_rule(f"Read(//{str(base).lstrip('/')}/masked/{NAME})", "deny", RuleOrigin("cli", None, None, ws))
    policy, notes = derive_policy(SandboxPolicy(workspace=ws), rules=[rule], mask_defaults=False, sandbox_ids=(uid, uid))
    assert base / "masked" / NAME in set(policy.read_denied), notes


@pytest.mark.anyio
async def test_the_fixed_uid_does_not_read_it(top: tuple[Path, int]) -> None:
    """End to end, failed before: ``cat`` as U printed the denied file."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    base, uid = top
    session = Path(tempfile.mkdtemp(prefix="rt46-review26-as-", dir="/tmp"))
    try:
        async with shellrt.Runtime(
            workspace=base / "ws",
            sandbox=BwrapConfig(sandbox_uid=uid, persistent=True),
            mode="bypassPermissions",
            session_dir=session,
            settings_files=(),
            deny=[f"Read(//{str(base).lstrip('/')}/masked/*.pem)"],
        ) as rt:
            result = await one_call(rt, "Bash", command="sh r.sh; echo ran")
    finally:
        shutil.rmtree(session, ignore_errors=True)
    text = block_text(result)
    assert "ran" in text and "SECRET46" not in text, result
