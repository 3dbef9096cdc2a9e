"""Red team round 38 (rules): a read-denied path in an overlay whose bytes live at *another* place
of a layer (``redirect_dir``, ``metacopy``, data-only lower layers).

Round 37 masked the denied path's own place in each layer (``<layer>/<same relative path>``). An
overlay with ``redirect_dir=on`` names a renamed directory's lower contents by an xattr
(``trusted.overlay.redirect``, absolute or relative to the parent), and with ``metacopy=on`` a file's
data lives where its redirect points, in a lower or a data-only layer (``lowerdir=l::data``:
composefs, container image stores). With ``Read(<merged>/keys2/**)``, ``Read(<merged>/secret.txt)``,
``Read(<merged>/renamed.txt)`` and ``Read(<merged>/sub/newname/**)``, ``cat <lower>/keys/id
<data>/blob <lower>/orig.txt <lower>/sub/oldname/f`` printed all four, both bwrap modes (the
operator's overlay; root caller, commands as the leased uid)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig
from sandbox.factory import create_backend
from tests._rt11_rules import deny_policy, run_in
from tests.conftest import require

_SECRETS = {"keys/id": "KEYDATA\n", "orig.txt": "ORIGSECRET\n", "sub/oldname/f": "OLDNAME\n"}


@pytest.fixture
def overlay() -> Iterator[tuple[Path, Path, Path, Path]]:
    """(the merged directory, its lower layer, its data-only layer, a workspace)."""
    require(os.geteuid() == 0, "mounting an overlay and writing trusted.* xattrs needs root")
    base = Path(tempfile.mkdtemp(prefix="rt38-redirect-", dir="/var/tmp"))
    lower, data, upper, work, merged, ws = (base / n for n in ("lower", "data", "upper", "work", "merged", "ws"))
    for d in (lower / "keys", lower / "sub" / "oldname", data, upper / "keys2", upper / "sub" / "newname", work, merged):
        d.mkdir(parents=True)
    ws.mkdir(mode=0o777)
    for name, text in _SECRETS.items():
        (lower / name).write_text(text)
    (data / "blob").write_text("BLOBSECRET\n")
    for stub, size in ((lower / "secret.txt", 11), (upper / "renamed.txt", 11)):
        stub.write_bytes(b"")
        os.truncate(stub, size)
    for whiteout in (upper / "keys", upper / "orig.txt", upper / "sub" / "oldname"):
        os.mknod(whiteout, 0o600 | 0o020000, os.makedev(0, 0))
    for path, key, value in (
        (upper / "keys2", "redirect", b"/keys"),  # a renamed directory: absolute
        (upper / "sub" / "newname", "redirect", b"oldname"),  # relative: in the same parent
        (lower / "secret.txt", "metacopy", b""),  # data in the data-only layer
        (lower / "secret.txt", "redirect", b"/blob"),
        (upper / "renamed.txt", "metacopy", b""),  # a renamed metacopy file
        (upper / "renamed.txt", "redirect", b"/orig.txt"),
    ):
        os.setxattr(path, f"trusted.overlay.{key}", value)
    for root, dirs, files in os.walk(base):
        for name in (*dirs, *files):
            os.chmod(os.path.join(root, name), 0o755, follow_symlinks=False)
    base.chmod(0o755)
    ws.chmod(0o777)
    options = f"lowerdir={lower}::{data},upperdir={upper},workdir={work},redirect_dir=on,metacopy=on"
    subprocess.run(["mount", "-t", "overlay", "overlay", "-o", options, str(merged)], check=True)
    try:
        assert (merged / "secret.txt").read_text() == "BLOBSECRET\n"
        assert (merged / "keys2" / "id").read_text() == "KEYDATA\n"
        yield merged, lower, data, ws
    finally:
        subprocess.run(["umount", str(merged)], check=False)
        shutil.rmtree(base, ignore_errors=True)


def rules(merged: Path) -> list[str]:
    return [
        f"Read(/{merged}/{name})"
        for name in ("keys2/**", "secret.txt", "renamed.txt", "sub/newname/**")
    ]


def test_the_policy_masks_where_a_redirect_leads(overlay: tuple[Path, Path, Path, Path]) -> None:
    merged, lower, data, ws = overlay
    denied = set(deny_policy(ws, *rules(merged)).read_denied)
    want = {lower / "keys", data / "blob", lower / "orig.txt", lower / "sub" / "oldname"}
    assert want <= denied, denied


@pytest.mark.parametrize("persistent", [False, True], ids=["per-command", "session"])
def test_a_command_reads_no_denied_file_where_a_redirect_leads(
    overlay: tuple[Path, Path, Path, Path], persistent: bool
) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    merged, lower, data, ws = overlay
    policy = deny_policy(ws, *rules(merged))
    session = ws.parent / "session"
    session.mkdir(exist_ok=True)
    names = " ".join(f"'{n}'" for n in (*(lower / k for k in _SECRETS), data / "blob"))
    out = anyio.run(
        run_in,
        create_backend(BwrapConfig(persistent=persistent), policy),
        ws,
        session,
        f"cat {merged}/secret.txt {merged}/keys2/id {names}; echo done",
    )
    assert "done" in out, out
    for secret in ("KEYDATA", "ORIGSECRET", "OLDNAME", "BLOBSECRET"):
        assert secret not in out, out
