"""Red team round 38 (rules): an overlay layer whose name ends in a backslash.

The kernel shows a legacy ``lowerdir=`` list with each layer's ``\\`` and ``:`` escaped by a
backslash (then octal-escaped by mountinfo). Round 37 split the list at every ``:`` not preceded by
a backslash, so a layer named ``l\\`` (shown ``l\\\\:next``) hid the separator after it: both layers
were read as one name that does not exist, and neither was masked. With ``Read(<merged>/secret.txt)``,
``cat 'l\\/secret.txt' o/other.txt`` printed both, both bwrap modes (root caller). The list is now
read escape by escape."""

from __future__ import annotations

import ctypes
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


def _mount_overlay(target: Path, options: list[tuple[str, str]]) -> None:
    """An overlay at ``target`` through the new mount API (each option one string: no quoting)."""
    libc = ctypes.CDLL(None, use_errno=True)

    def call(number: int, *args: object) -> int:
        result = int(libc.syscall(number, *args))
        if result < 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))
        return result

    fs = call(430, b"overlay", 0)  # fsopen
    try:
        for key, value in options:
            call(431, fs, 1, key.encode(), os.fsencode(value), 0)  # fsconfig SET_STRING
        call(431, fs, 6, None, None, 0)  # fsconfig CMD_CREATE
        mnt = call(432, fs, 0, 0)  # fsmount
        try:
            call(429, mnt, b"", -100, os.fsencode(target), 4)  # move_mount F_EMPTY_PATH
        finally:
            os.close(mnt)
    finally:
        os.close(fs)


@pytest.fixture
def overlay() -> Iterator[tuple[Path, Path, Path, Path]]:
    """(the merged directory, the layer named ``l\\``, the second layer, a workspace)."""
    require(os.geteuid() == 0, "mounting an overlay needs root")
    require(os.uname().machine == "x86_64", "the new mount API's syscall numbers here are x86_64's")
    base = Path(tempfile.mkdtemp(prefix="rt38-layernames-", dir="/var/tmp"))
    odd, other, merged, ws = base / "l\\", base / "o", base / "merged", base / "ws"
    for d in (odd, other, merged, ws):
        d.mkdir()
    (odd / "secret.txt").write_text("TOPSECRET\n")
    (other / "other.txt").write_text("OTHERSECRET\n")
    for path in (base, odd, other, merged, odd / "secret.txt", other / "other.txt"):
        path.chmod(0o755)
    ws.chmod(0o777)
    escaped = [str(layer).replace("\\", "\\\\").replace(":", "\\:") for layer in (odd, other)]
    _mount_overlay(merged, [("lowerdir", ":".join(escaped))])
    try:
        yield merged, odd, other, ws
    finally:
        os.system(f"umount '{merged}'")  # noqa: S605 - a path of our own temp dir
        shutil.rmtree(base, ignore_errors=True)


def test_a_layer_ending_in_a_backslash_is_parsed() -> None:
    from sandbox._maskaliases import overlay_layers

    line = "1 2 0:9 / /m rw - overlay none ro,lowerdir=/x/l\\134\\134:/x/o:/x/a\\134:b::/d\n"
    assert overlay_layers(line) == [("/m", "/", ["/x/l\\", "/x/o", "/x/a:b", "/d"])]


def test_the_policy_masks_both_layers(overlay: tuple[Path, Path, Path, Path]) -> None:
    merged, odd, other, ws = overlay
    denied = set(deny_policy(ws, f"Read(/{merged}/secret.txt)", f"Read(/{merged}/other.txt)").read_denied)
    assert {odd / "secret.txt", other / "other.txt"} <= denied, denied


@pytest.mark.parametrize("persistent", [False, True], ids=["per-command", "session"])
def test_a_command_reads_no_denied_file_in_a_backslashed_layer(
    overlay: tuple[Path, Path, Path, Path], persistent: bool
) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    merged, odd, other, ws = overlay
    policy = deny_policy(ws, f"Read(/{merged}/secret.txt)", f"Read(/{merged}/other.txt)")
    session = ws.parent / "session"
    session.mkdir(exist_ok=True)
    out = anyio.run(
        run_in,
        create_backend(BwrapConfig(persistent=persistent), policy),
        ws,
        session,
        f"cat '{odd}/secret.txt' '{other}/other.txt'; echo done",
    )
    assert "done" in out, out
    assert "TOPSECRET" not in out and "OTHERSECRET" not in out, out
