"""Red team round 42 (perms5): a repository's mask skipped where an ACL lets the sandbox uid read.

Round 41 made a root caller's host skip a repository's mask outside the writable roots where the
sandbox uid could neither list the name nor read the file -- judged by the mode bits alone. A
directory ``0700`` whose POSIX ACL grants another uid (``u:<uid>:rx``, the mode's group bits then
being the ACL's mask) was judged closed: the mask was skipped, while the uid the ACL names reads
the file. An extended ACL on the way now counts as reachable (masked, as before round 41).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox import SandboxPolicy
from shellrt.permissions.rules import RuleOrigin, parse_rule
from shellrt.runtime.sandbox_policy import derive_policy
from tests._acl import set_access_acl
from tests.conftest import require

_UNDEFINED = 0xFFFFFFFF


def _grant(path: Path, uid: int) -> None:
    """``setfacl -m u:<uid>:rx path`` (no setfacl here: `tests._acl`)."""
    entries = [(0x01, 7, _UNDEFINED), (0x02, 5, uid), (0x04, 0, _UNDEFINED), (0x10, 5, _UNDEFINED), (0x20, 0, _UNDEFINED)]
    set_access_acl(path, entries)


@pytest.fixture
def top() -> Iterator[Path]:
    require(os.geteuid() == 0, "a root caller's host judges what its sandbox uid can reach")
    base = Path(tempfile.mkdtemp(prefix="rt42-perms5-acl-", dir="/var/tmp"))
    base.chmod(0o755)
    (base / "ws" / ".claude").mkdir(parents=True)
    for name in ("granted", "closed"):
        (base / name).mkdir(mode=0o700)
        (base / name / "k.pem").write_text("K\n")
        (base / name / "k.pem").chmod(0o600)
    _grant(base / "granted", 0x7E000123)
    _grant(base / "granted" / "k.pem", 0x7E000123)
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _repo(rule: str, ws: Path) -> object:
    return parse_rule(rule, "deny", RuleOrigin("project", ws / ".claude" / "settings.json", 1, ws))


def test_a_directory_an_acl_opens_is_masked(top: Path) -> None:
    ws = top / "ws"
    policy, notes = derive_policy(
        SandboxPolicy(workspace=ws), rules=[_repo(f"Read(/{top}/granted/k.pem)", ws)], mask_defaults=False
    )
    assert top / "granted" / "k.pem" in policy.read_denied, (policy.read_denied, notes)


def test_a_closed_directory_without_an_acl_stays_unmasked(top: Path) -> None:
    ws = top / "ws"
    policy, notes = derive_policy(
        SandboxPolicy(workspace=ws), rules=[_repo(f"Read(/{top}/closed/k.pem)", ws)], mask_defaults=False
    )
    assert top / "closed" / "k.pem" not in policy.read_denied, policy.read_denied
    assert any("cannot reach" in n for n in notes), notes
