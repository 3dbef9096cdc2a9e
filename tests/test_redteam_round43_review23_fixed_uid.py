"""Red team, round 43 (review23): a match closed to "others" but owned by the fixed sandbox uid.

Round 41 (a repository's rules) and round 42 (perms5: the operator's globs) leave a mask out when
the sandbox uid cannot reach the path, judged by the "others" mode bits and ACLs (`_others_reach`):
a leased uid owns nothing on the host. An operator's fixed ``BwrapConfig(sandbox_uid=...)`` may: with
``--deny 'Read(//srv/**/*.pem)'`` and ``/srv/app`` (0700) owned by that uid, the match was judged
"closed to others" and left unmasked, and a script's ``cat /srv/app/k.pem`` ran as its owner and
read it -- with one bwrap per command (``persistent=False``) or without the lock view, whose overlay
happened to refuse it (its mounter's credentials). Now the owner and group bits count where the
path's owner or group is the sandbox's fixed uid or gid.
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
from tests._calls import block_text, one_call
from tests.conftest import require

SPARE = DEFAULT_POOL_START + DEFAULT_POOL_SIZE + 430  # beside test_session_uid's spares
RULES = ["Read(//{top}/**/*.pem)", "Read(//{top}/app/*)"]


@pytest.fixture
def top() -> Iterator[tuple[Path, int]]:
    require(os.geteuid() == 0, "a fixed sandbox uid is a root caller's setting")
    held = lease_uid(SPARE, 8, widen="-")  # one of 8 spare uids no session of the pool can have
    base = Path(tempfile.mkdtemp(prefix="rt43-review23-uid-", dir="/var/tmp"))
    try:
        base.chmod(0o755)
        (base / "ws").mkdir()
        (base / "ws").chmod(0o777)
        (base / "app").mkdir(mode=0o700)
        (base / "app" / "k.pem").write_text("SECRET-OWNED\n")
        (base / "app" / "k.pem").chmod(0o600)
        for path in (base / "app", base / "app" / "k.pem"):
            os.chown(path, held.uid, held.uid)
        (base / "ws" / "r.sh").write_text(f"id -u; cat {base}/app/k.pem\n")  # a script: the sandbox's to stop
        yield base, held.uid
    finally:
        shutil.rmtree(base, ignore_errors=True)
        held.release()


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("ids", ["uid", "gid"])
def test_a_place_the_fixed_ids_own_is_masked(top: tuple[Path, int], rule: str, ids: str) -> None:
    base, uid = top
    if ids == "gid":  # the group's bits, not the owner's
        for path in (base / "app", base / "app" / "k.pem"):
            os.chown(path, 0, uid)
        (base / "app").chmod(0o750)
        (base / "app" / "k.pem").chmod(0o640)
    text = rule.format(top=str(base).lstrip("/"))
    parsed = parse_rule(text, "deny", RuleOrigin("cli", None, None, base / "ws"))
    policy, notes = derive_policy(
        SandboxPolicy(workspace=base / "ws"), rules=[parsed], mask_defaults=False, sandbox_ids=(uid, uid)
    )
    assert base / "app" / "k.pem" in policy.read_denied, (policy.read_denied, notes)
    leased, _ = derive_policy(SandboxPolicy(workspace=base / "ws"), rules=[parsed], mask_defaults=False)
    assert base / "app" / "k.pem" not in leased.read_denied  # a leased uid still reaches nothing here


@pytest.mark.anyio
@pytest.mark.parametrize("config", [{"persistent": False}, {"lock_view": False}], ids=["per-command", "no-lock-view"])
@pytest.mark.parametrize("rule", RULES)
async def test_the_fixed_uid_does_not_read_its_own_file_an_operator_glob_denies(
    top: tuple[Path, int], rule: str, config: dict[str, bool]
) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    base, uid = top
    session = Path(tempfile.mkdtemp(prefix="rt43-review23-us-", dir="/tmp"))
    try:
        async with shellrt.Runtime(
            workspace=base / "ws",
            sandbox=BwrapConfig(sandbox_uid=uid, **config),
            mode="bypassPermissions",
            session_dir=session,
            settings_files=(),
            deny=[rule.format(top=str(base).lstrip("/"))],
        ) as rt:
            result = await one_call(rt, "Bash", command="sh r.sh; echo ran")
    finally:
        shutil.rmtree(session, ignore_errors=True)
    text = block_text(result)
    assert "ran" in text and str(uid) in text and "SECRET-OWNED" not in text, result
