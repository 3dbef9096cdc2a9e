"""Red team round 37: a read-denied path in an overlay shown again by the overlay's own layers.

Round 36 masked every other mount of a denied file's file system (a bind mount of the workspace).
An overlay mount is another device: its files live in its layers, plain directories of the file
system below (``lowerdir=``, ``upperdir=``), which bwrap's recursive ``--ro-bind / /`` shows at
their host paths. With the workspace an overlay (a CI's throwaway copy of a checkout, a container
tool's merged directory, an application's overlay root) and ``Read(<merged>/secret.txt)``,
``cat <lower>/secret.txt`` printed the secret the mask of ``<merged>/secret.txt`` hid, in both bwrap
modes. Here the overlay lies outside the workspace (a root caller's bwrap cannot idmap an overlay
workspace: it refuses to start); the non-root file runs a workspace that is an overlay.
"""

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


@pytest.fixture
def overlay() -> Iterator[tuple[Path, Path, Path, Path, Path]]:
    """(the merged directory, its lower layer, a second lower layer, its upper layer, a workspace)."""
    require(os.geteuid() == 0, "mounting an overlay needs root")
    base = Path(tempfile.mkdtemp(prefix="rt37-overlay-", dir="/var/tmp"))
    base.chmod(0o755)
    lower, lower2, upper, work, merged = (base / n for n in ("lower", "lower:2", "upper", "work", "merged"))
    ws = base / "ws"
    for d in (lower / "keys", lower2, upper, work, merged, ws):
        d.mkdir(parents=True)
    for path, text in (
        (lower / "secret.txt", "TOPSECRET\n"),
        (lower / "keys" / "id", "KEYDATA\n"),
        (lower2 / "deep.txt", "DEEPSECRET\n"),
    ):
        path.write_text(text)
        path.chmod(0o644)
    for d in (base, lower, lower2, lower / "keys"):
        d.chmod(0o755)
    esc = str(lower2).replace(":", "\\:")  # a layer whose name holds the separator
    options = f"lowerdir={lower}:{esc},upperdir={upper},workdir={work}"
    subprocess.run(["mount", "-t", "overlay", "overlay", "-o", options, str(merged)], check=True)
    try:
        ws.chmod(0o777)
        (merged / "fresh.txt").write_text("UPPERSECRET\n")  # lives in the upper layer
        (merged / "fresh.txt").chmod(0o644)
        yield merged, lower, lower2, upper, ws
    finally:
        subprocess.run(["umount", str(merged)], check=False)
        shutil.rmtree(base, ignore_errors=True)


def rules(merged: Path) -> list[str]:
    return [f"Read(/{merged}/{name})" for name in ("secret.txt", "keys/**", "deep.txt", "fresh.txt")]


def test_the_policy_masks_each_layer_of_a_denied_overlay_path(overlay: tuple[Path, Path, Path, Path, Path]) -> None:
    merged, lower, lower2, upper, ws = overlay
    denied = set(deny_policy(ws, *rules(merged)).read_denied)
    want = {lower / "secret.txt", lower / "keys", lower2 / "deep.txt", upper / "fresh.txt"}
    assert want <= denied, denied


def test_overlay_aliases_parses_escaped_layers() -> None:
    from sandbox._maskaliases import overlay_layers

    line = (
        "262 27 0:105 / /m rw - overlay overlay rw,lowerdir=/a\\:b:/c,upperdir=/u\\054x,workdir=/w,uuid=on\n"
    )
    assert overlay_layers(line) == [("/m", "/", ["/u,x", "/a:b", "/c"])]
    plus = "5 1 0:9 /sub /n rw - overlay none rw,lowerdir+=/l1,lowerdir+=/l2,datadir+=/d\n"
    assert overlay_layers(plus) == [("/n", "/sub", ["/l1", "/l2", "/d"])]


@pytest.mark.parametrize("persistent", [False, True], ids=["per-command", "session"])
def test_a_command_reads_no_denied_file_through_an_overlay_layer(
    overlay: tuple[Path, Path, Path, Path, Path], persistent: bool
) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    merged, lower, lower2, upper, ws = overlay
    policy = deny_policy(ws, *rules(merged))
    session = ws.parent / "session"
    session.mkdir(exist_ok=True)
    names = [lower / "secret.txt", lower / "keys" / "id", lower2 / "deep.txt", upper / "fresh.txt"]
    quoted = " ".join(f"'{n}'" for n in names)
    out = anyio.run(
        run_in,
        create_backend(BwrapConfig(persistent=persistent), policy),
        ws,
        session,
        f"cat {merged}/secret.txt {merged}/fresh.txt {quoted}; echo done",
    )
    assert "done" in out, out
    for secret in ("TOPSECRET", "KEYDATA", "DEEPSECRET", "UPPERSECRET"):
        assert secret not in out, out
