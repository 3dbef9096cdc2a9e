"""Round 39 (locks2): a read-denied file the host replaced was readable at its denied name.

A mask is a mount on the denied file's dentry. The host replacing the file -- an editor's atomic
save (a new file renamed over it: the kernel detaches the mask from every namespace), a rename
away and a new file at the name (the mask goes along with the old file), the same for a directory
on the way -- left the session's zygote with no mask at the denied name, and the backend replaced
its zygote only when a denied path's kind changed (a file both times): every later command read
the new content of the denied file. Round 38 (lead)'s lock view skip (a move failing EINVAL whose
source is no longer a mount) let those inits through too. Fixed in the backend's staleness check
(`BwrapBackend._denied_kinds`): each denied file's identity is part of it, so a replaced file
replaces the zygote, whose masks follow the policy's paths again.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.bwrap import BwrapBackend
from tests._bwrap_session import require_bwrap, supervised
from tests.conftest import require

pytestmark = pytest.mark.bwrap

SECRET = "r39-locks2-new-secret"


def replace(denied: Path, how: str) -> None:
    """The host's ways of putting a new file at a denied name (the content: `SECRET`)."""
    if how == "atomic":  # an editor's save: a new file renamed over the old one
        tmp = denied.with_name(denied.name + ".tmp")
        tmp.write_text(SECRET + "\n")
        tmp.chmod(0o644)
        tmp.rename(denied)
        return
    if how == "rename":  # the old one kept aside (a backup), a new one made
        denied.rename(denied.with_name(denied.name + ".old"))
    else:  # "parent": the directory on the way renamed (a release swap), made again
        denied.parent.rename(denied.parent.with_name("old"))
        denied.parent.mkdir(mode=0o755)
    denied.write_text(SECRET + "\n")
    denied.chmod(0o644)


@pytest.mark.parametrize("lock_view", [True, False], ids=["lockview", "no-lockview"])
@pytest.mark.parametrize("how", ["atomic", "rename", "parent"])
def test_a_replaced_denied_file_stays_unreadable(tmp_path: Path, lock_view: bool, how: str) -> None:
    """Failed before: every command after the host replaced the file read its new content."""
    require_bwrap()
    require(os.geteuid() == 0, "as uid 65534: test_redteam_round39_locks2_renamedmask_nonroot.py")
    ws = tmp_path / "ws"
    ws.mkdir()
    host = Path(tempfile.mkdtemp(prefix="shellrt-lv39-", dir="/var/tmp"))  # below covered /var
    host.chmod(0o755)  # the sandbox runs as a leased uid
    (host / "d").mkdir(mode=0o755)
    denied = host / "d" / "secret"
    denied.write_text("old\n")
    denied.chmod(0o644)
    outs: list[str] = []
    try:

        async def main() -> None:
            policy = SandboxPolicy(workspace=ws, read_denied=[denied])
            backend = BwrapBackend(BwrapConfig(persistent=True, lock_view=lock_view), policy)
            async with supervised(backend, tmp_path / "s") as sup:
                first = await sup.run(f"cat {denied}; echo end", timeout_s=60)
                assert "old" not in first.preview and "end" in first.preview, first.preview
                replace(denied, how)
                for _ in range(6):  # past the warm pool: inits set up before and after
                    result = await sup.run(f"cat {denied}; echo end", timeout_s=60)
                    outs.append(result.preview)
                    await anyio.sleep(0.05)

        anyio.run(main)
    finally:
        shutil.rmtree(host, ignore_errors=True)
    assert len(outs) == 6 and all("end" in text for text in outs), outs
    assert not any(SECRET in text for text in outs), outs


def test_a_replaced_write_denied_file_stays_read_only(tmp_path: Path) -> None:
    """The same for an ``Edit`` deny's read-only bind: the host's editor saved the protected file
    (a new file renamed over it: the bind detached), and every later command rewrote it.
    Failed before: the later commands' writes landed."""
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    ws.chmod(0o777)
    protected = ws / "app.ini"
    protected.write_text("first\n")
    protected.chmod(0o666)
    outs: list[str] = []

    async def main() -> None:
        policy = SandboxPolicy(workspace=ws, write_denied=[protected])
        backend = BwrapBackend(BwrapConfig(persistent=True), policy)
        async with supervised(backend, tmp_path / "s") as sup:
            first = await sup.run(f"echo pwned > {protected}; echo end", timeout_s=60)
            assert "end" in first.preview and protected.read_text() == "first\n", first.preview
            tmp = ws / "app.ini.tmp"
            tmp.write_text("saved\n")
            tmp.chmod(0o666)
            tmp.rename(protected)
            for _ in range(6):
                result = await sup.run(f"echo pwned > {protected}; echo end", timeout_s=60)
                outs.append(result.preview)

    anyio.run(main)
    assert len(outs) == 6 and all("end" in text for text in outs), outs
    assert protected.read_text() == "saved\n", (protected.read_text(), outs)
