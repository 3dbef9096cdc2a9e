"""Red team, round 48 (perms8): the file tools judged the sandbox uid's reach by mode bits alone.

A root caller's file tools run as root, so they refuse what the sandbox uid could not read
(`sandbox.confine.reader_may`, round 16): "the file tools obey the same boundary as commands".
That judgement was a fifth reading of "what does the sandbox uid reach" (round 47 joined four in
`sandbox._reach`) and read mode bits only: a world-readable file, or a directory, whose ACL says
``u:U:---`` is closed to the commands (the kernel refuses U) yet Read returned it, with root's
power. Now `reader_may` asks `sandbox._reach` too.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import shellrt
from sandbox import BwrapConfig
from sandbox._uid_lease import DEFAULT_POOL_SIZE, DEFAULT_POOL_START, lease_uid
from tests._acl import set_access_acl as _acl
from tests._calls import block_text, one_call
from tests.conftest import require

SPARE = DEFAULT_POOL_START + DEFAULT_POOL_SIZE + 510  # beside rounds 43/45/46/47's spares
_ANY = 0xFFFFFFFF
U_OBJ, USER, G_OBJ, MASK, OTHERS = 0x01, 0x02, 0x04, 0x10, 0x20


@pytest.fixture
def held() -> Iterator[int]:
    require(os.geteuid() == 0, "a root caller's file tools judge what its sandbox uid reads")
    lease = lease_uid(SPARE, 8, widen="-")
    try:
        yield lease.uid
    finally:
        lease.release()


@pytest.fixture
def base(held: int) -> Iterator[Path]:
    top = Path(tempfile.mkdtemp(prefix="rt48-perms8-tools-", dir="/var/tmp"))
    try:
        top.chmod(0o755)
        closed_file = top / "open-dir"
        closed_file.mkdir(mode=0o755)
        (closed_file / "k.pem").write_text("SECRET48-FILE\n")
        (closed_file / "k.pem").chmod(0o644)
        _acl(closed_file / "k.pem", [(U_OBJ, 6, _ANY), (USER, 0, held), (G_OBJ, 4, _ANY), (MASK, 4, _ANY), (OTHERS, 4, _ANY)])
        closed_dir = top / "closed-dir"
        closed_dir.mkdir(mode=0o755)
        (closed_dir / "k.pem").write_text("SECRET48-DIR\n")
        (closed_dir / "k.pem").chmod(0o644)
        _acl(closed_dir, [(U_OBJ, 7, _ANY), (USER, 0, held), (G_OBJ, 5, _ANY), (MASK, 5, _ANY), (OTHERS, 5, _ANY)])
        (top / "ws").mkdir(mode=0o777)
        yield top
    finally:
        shutil.rmtree(top, ignore_errors=True)


def _u_reads(uid: int, path: Path) -> bool:
    """The kernel's answer: may ``uid`` (its gid the same, no other groups) open ``path``?"""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            os.close(os.open(path, os.O_RDONLY))
            os._exit(0)
        except BaseException:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


@pytest.mark.anyio
async def test_read_refuses_what_an_acl_closes_to_the_sandbox_uid(base: Path, held: int) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    files = [base / "open-dir" / "k.pem", base / "closed-dir" / "k.pem"]
    assert not any(_u_reads(held, f) for f in files), "the layouts are not closed to the sandbox uid"
    (base / "open-dir" / "ok.txt").write_text("PLAIN48\n")
    async with shellrt.Runtime(
        workspace=base / "ws",
        sandbox=BwrapConfig(sandbox_uid=held, persistent=False),
        mode="bypassPermissions",
        session_dir=base / "rt-session",
        settings_files=(),
    ) as rt:
        reads = [block_text(await one_call(rt, "Read", file_path=str(f))) for f in files]
        plain = block_text(await one_call(rt, "Read", file_path=str(base / "open-dir" / "ok.txt")))
    assert "PLAIN48" in plain, plain  # what the uid reads, the tools read
    leaked = [text for text in reads if "SECRET48" in text]
    assert not leaked, f"Read returned what the sandbox uid cannot read: {leaked}"
    assert all("cannot read" in text or "Permission denied" in text for text in reads), reads
