"""Red team round 38 (rules): a file below an operator's denied directory *outside* the writable
roots, hard-linked *into* them (``ln /srv/keys/id ws/id``: the operator, a package, a backup tool,
before the session). Round 37's count took the name in the roots as masked ("the sandbox masks the
names in the roots"), but the sandbox looks in the roots only for denied files and for the files
below denied directories *inside* them: ``cat id`` printed what ``Read(//srv/keys/**)`` hides, both
bwrap modes (root caller, commands as the leased uid). The name is masked now (found when the policy
is derived, where the directory is walked already)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig
from sandbox.factory import create_backend
from tests._rt11_rules import deny_policy, run_in
from tests.conftest import require


@pytest.fixture
def base() -> Iterator[Path]:
    require(os.geteuid() == 0, "the root caller's sandbox (commands as the leased uid)")
    top = Path(tempfile.mkdtemp(prefix="rt38-dirlinks-", dir="/var/tmp"))
    (top / "ws").mkdir(mode=0o777)
    (top / "keys" / "deep").mkdir(parents=True)
    for d in (top, top / "keys", top / "keys" / "deep"):
        d.chmod(0o755)
    (top / "ws").chmod(0o777)
    for name, text in (("id", "KEYDATA\n"), ("deep/other", "DEEPKEY\n")):
        (top / "keys" / name).write_text(text)
        (top / "keys" / name).chmod(0o644)
    os.link(top / "keys" / "id", top / "ws" / "id")
    (top / "ws" / "sub").mkdir(mode=0o777)
    os.link(top / "keys" / "deep" / "other", top / "ws" / "sub" / "other")
    try:
        yield top
    finally:
        shutil.rmtree(top, ignore_errors=True)


def test_the_policy_masks_the_links_in_the_roots(base: Path) -> None:
    ws = base / "ws"
    denied = set(deny_policy(ws, f"Read(/{base}/keys/**)").read_denied)
    assert {ws / "id", ws / "sub" / "other"} <= denied, denied


@pytest.mark.parametrize("persistent", [False, True], ids=["per-command", "session"])
def test_a_command_reads_no_denied_file_through_a_link_in_the_roots(base: Path, persistent: bool) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    ws = base / "ws"
    policy = deny_policy(ws, f"Read(/{base}/keys/**)")
    session = base / "session"
    session.mkdir()
    out = anyio.run(
        run_in, create_backend(BwrapConfig(persistent=persistent), policy), ws, session, "cat id sub/other; echo done"
    )
    assert "done" in out, out
    assert "KEYDATA" not in out and "DEEPKEY" not in out, out
