"""Red team round 38 (rules): a read-denied path that *is a layer's file* of an overlay mounted
elsewhere. Round 37 masked a denied path in an overlay in each of its layers; the other way round
was not looked at: with the workspace (or a directory above it) a lower layer of an operator's
overlay (a CI's throwaway build tree over the checkout), the overlay's merged directory shows the
layer's files under its own name, on a device of its own. With ``Read(./secret.txt)`` and
``Read(./keys/**)``, ``cat <merged>/secret.txt <merged>/keys/id`` (and through an overlay whose
layer is the workspace's parent) printed both, both bwrap modes (root caller, commands as the leased
uid), and Read printed them (local)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

import shellrt
from sandbox import BwrapConfig
from sandbox.factory import create_backend
from tests._calls import one_call
from tests._rt11_rules import deny_policy, run_in
from tests.conftest import require

_RULES = ("Read(./secret.txt)", "Read(./keys/**)")


@pytest.fixture
def overlays() -> Iterator[tuple[Path, Path, Path]]:
    """(the workspace, an overlay over it, an overlay over its parent)."""
    require(os.geteuid() == 0, "mounting an overlay needs root")
    base = Path(tempfile.mkdtemp(prefix="rt38-ovview-", dir="/var/tmp"))
    ws = base / "top" / "ws"
    (ws / "keys").mkdir(parents=True)
    (ws / "secret.txt").write_text("TOPSECRET\n")
    (ws / "keys" / "id").write_text("KEYDATA\n")
    names = ("m1", "u1", "w1", "m2", "u2", "w2")
    for name in names:
        (base / name).mkdir()
    for path in (base, base / "top", ws / "keys", *(base / n for n in names)):
        path.chmod(0o755)
    for path in (ws / "secret.txt", ws / "keys" / "id"):
        path.chmod(0o644)
    ws.chmod(0o777)
    made: list[Path] = []
    try:
        for merged, lower, n in ((base / "m1", ws, "1"), (base / "m2", base / "top", "2")):
            options = f"lowerdir={lower},upperdir={base / ('u' + n)},workdir={base / ('w' + n)}"
            subprocess.run(["mount", "-t", "overlay", "overlay", "-o", options, str(merged)], check=True)
            made.append(merged)
        yield ws, base / "m1", base / "m2"
    finally:
        for merged in made:
            subprocess.run(["umount", str(merged)], check=False)
        shutil.rmtree(base, ignore_errors=True)


def test_the_policy_masks_the_overlays_names(overlays: tuple[Path, Path, Path]) -> None:
    ws, m1, m2 = overlays
    denied = set(deny_policy(ws, *_RULES).read_denied)
    want = {m1 / "secret.txt", m1 / "keys", m2 / "ws" / "secret.txt", m2 / "ws" / "keys"}
    assert want <= denied, denied


@pytest.mark.parametrize("persistent", [False, True], ids=["per-command", "session"])
def test_a_command_reads_no_denied_file_through_an_overlay_of_its_directory(
    overlays: tuple[Path, Path, Path], persistent: bool
) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    ws, m1, m2 = overlays
    session = ws.parent.parent / "session"
    session.mkdir(exist_ok=True)
    out = anyio.run(
        run_in,
        create_backend(BwrapConfig(persistent=persistent), deny_policy(ws, *_RULES)),
        ws,
        session,
        f"cat {m1}/secret.txt {m1}/keys/id {m2}/ws/secret.txt {m2}/ws/keys/id; echo done",
    )
    assert "done" in out, out
    assert "TOPSECRET" not in out and "KEYDATA" not in out, out


@pytest.mark.anyio
async def test_read_refuses_an_overlay_name_of_a_denied_file(overlays: tuple[Path, Path, Path]) -> None:
    ws, m1, m2 = overlays
    async with shellrt.Runtime(
        workspace=ws,
        sandbox="local",
        mode="bypassPermissions",
        session_dir=ws.parent.parent / "s",
        settings_files=(),
        deny=_RULES,
    ) as rt:
        seen = [await one_call(rt, "Read", file_path=str(p)) for p in (m1 / "secret.txt", m2 / "ws" / "keys" / "id")]
    for result in seen:
        assert result["is_error"], seen
        assert "TOPSECRET" not in str(result["content"]) and "KEYDATA" not in str(result["content"]), seen
