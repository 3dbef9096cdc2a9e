"""Red team, round 45 (perms6): an ACL that closes a place to the sandbox uid, read as the kernel does.

Round 41 skips a mask outside the writable roots that the sandbox uid cannot reach (a mask is a
mount, and commands read the mount table: its name would show). Round 42 judged ACLs by their
presence only: a place the mode bits open counted as reachable whatever its ACL said, and one they
close counted as reachable as soon as it carried any ACL. So with a fixed ``sandbox_uid`` U, a 0755
directory whose ACL says ``u:U:---`` was masked and its file's name showed in
``/proc/self/mountinfo`` to the command that cannot list it (round 42's Left), and a 0700 directory
whose ACL grants someone else was masked too. Now the ACL's entries are read (user, named users,
group, named groups, mask, other, as the kernel's ``posix_acl_permission`` does) for the fixed ids;
for a leased uid (not known when the policy is made) every id the ACL names counts as a possible
sandbox uid, and the place is masked if any of them, or an unnamed uid, may reach it (fail closed
toward masking). An ACL that cannot be read or parsed counts as reachable.
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
from shellrt.runtime.sandbox_policy import derive_policy
from tests._acl import set_access_acl as _acl
from tests._calls import block_text, one_call
from tests.conftest import require

SPARE = DEFAULT_POOL_START + DEFAULT_POOL_SIZE + 450  # beside round 43's spares (+430)
SOMEONE = 0x7E000145  # a uid the second ACL grants: never the sandbox's
_UNDEFINED = 0xFFFFFFFF
NAME = "hidden-name-45.pem"


@pytest.fixture
def top() -> Iterator[tuple[Path, int]]:
    require(os.geteuid() == 0, "a root caller's host judges what its sandbox uid can reach")
    held = lease_uid(SPARE, 8, widen="-")
    base = Path(tempfile.mkdtemp(prefix="rt45-perms6-acl-", dir="/var/tmp"))
    try:
        base.chmod(0o755)
        (base / "ws" / ".claude").mkdir(parents=True)
        (base / "ws").chmod(0o777)
        for name, mode in (("denied", 0o755), ("granted", 0o700)):
            (base / name).mkdir()
            (base / name).chmod(mode)
            (base / name / NAME).write_text("SECRET45-ACL\n")
            (base / name / NAME).chmod(0o644 if name == "denied" else 0o600)
        # 0755, but u:U:--- (mask r-x): U may neither list nor cross it
        _acl(base / "denied", [(0x01, 7, _UNDEFINED), (0x02, 0, held.uid), (0x04, 5, _UNDEFINED), (0x10, 5, _UNDEFINED), (0x20, 5, _UNDEFINED)])
        # 0700, u:SOMEONE:r-x: only that uid besides the owner
        _acl(base / "granted", [(0x01, 7, _UNDEFINED), (0x02, 5, SOMEONE), (0x04, 0, _UNDEFINED), (0x10, 5, _UNDEFINED), (0x20, 0, _UNDEFINED)])
        (base / "ws" / "r.sh").write_text(f"grep -c {NAME} /proc/self/mountinfo; cat {base}/denied/{NAME}\n")
        yield base, held.uid
    finally:
        shutil.rmtree(base, ignore_errors=True)
        held.release()


def _masks(base: Path, rule: str, source: str, ids: tuple[int, int] | None) -> tuple[set[Path], list[str]]:
    ws = base / "ws"
    origin = RuleOrigin(source, ws / ".claude" / "settings.json", 1, ws) if source == "project" else RuleOrigin(source, None, None, ws)
    parsed = parse_rule(rule.format(top=str(base).lstrip("/")), "deny", origin)
    policy, notes = derive_policy(SandboxPolicy(workspace=ws), rules=[parsed], mask_defaults=False, sandbox_ids=ids)
    return set(policy.read_denied), notes


@pytest.mark.parametrize(
    ("rule", "source"),
    [
        ("Read(//{top}/denied/" + NAME + ")", "project"),
        ("Read(//{top}/denied/*.pem)", "cli"),
        ("Read(//{top}/granted/" + NAME + ")", "project"),
        ("Read(//{top}/granted/*.pem)", "cli"),
    ],
)
def test_a_place_the_acl_closes_to_the_fixed_uid_is_not_masked(top: tuple[Path, int], rule: str, source: str) -> None:
    base, uid = top
    where = "denied" if "/denied/" in rule else "granted"
    masked, notes = _masks(base, rule, source, (uid, uid))
    assert base / where / NAME not in masked, (masked, notes)
    assert any("cannot reach" in n for n in notes), notes


@pytest.mark.parametrize("where", ["denied", "granted"])
def test_a_leased_uid_is_judged_fail_closed(top: tuple[Path, int], where: str) -> None:
    """The controls: a leased uid may be any id (an unnamed one reaches ``denied``, the named
    ``SOMEONE`` reaches ``granted``): masked, as before."""
    base, _ = top
    masked, notes = _masks(base, "Read(//{top}/" + where + "/" + NAME + ")", "project", None)
    assert base / where / NAME in masked, (masked, notes)


def test_the_acl_grants_the_fixed_uid(top: tuple[Path, int]) -> None:
    """The control: the fixed uid is the one ``granted`` names: masked."""
    base, _ = top
    masked, notes = _masks(base, "Read(//{top}/granted/" + NAME + ")", "project", (SOMEONE, SOMEONE))
    assert base / "granted" / NAME in masked, (masked, notes)


@pytest.mark.anyio
@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
async def test_the_fixed_uid_sees_no_name_it_cannot_list(top: tuple[Path, int], persistent: bool) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    base, uid = top
    session = Path(tempfile.mkdtemp(prefix="rt45-perms6-as-", dir="/tmp"))
    try:
        async with shellrt.Runtime(
            workspace=base / "ws",
            sandbox=BwrapConfig(sandbox_uid=uid, persistent=persistent),
            mode="bypassPermissions",
            session_dir=session,
            settings_files=(),
            deny=[f"Read(//{str(base).lstrip('/')}/denied/*.pem)"],
        ) as rt:
            result = await one_call(rt, "Bash", command="sh r.sh; echo ran")
    finally:
        shutil.rmtree(session, ignore_errors=True)
    text = block_text(result)
    assert "ran" in text and "SECRET45" not in text, result
    assert text.splitlines()[0].strip() == "0", result  # no mount names the file


@pytest.mark.anyio
async def test_the_operators_own_rule_there_does_not_stop_per_command_bwrap(top: tuple[Path, int]) -> None:
    """The operator's static rule naming the file: one bwrap per command as U could not mount over a
    place U cannot reach ("bubblewrap cannot create namespaces here")."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    base, uid = top
    session = Path(tempfile.mkdtemp(prefix="rt45-perms6-ao-", dir="/tmp"))
    try:
        async with shellrt.Runtime(
            workspace=base / "ws",
            sandbox=BwrapConfig(sandbox_uid=uid, persistent=False),
            mode="bypassPermissions",
            session_dir=session,
            settings_files=(),
            deny=[f"Read(//{str(base).lstrip('/')}/denied/{NAME})"],
        ) as rt:
            result = await one_call(rt, "Bash", command="sh r.sh; echo ran")
    finally:
        shutil.rmtree(session, ignore_errors=True)
    text = block_text(result)
    assert "ran" in text and "SECRET45" not in text, result
    assert text.splitlines()[0].strip() == "0", result
