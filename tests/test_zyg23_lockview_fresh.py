"""Round 56 (zyg23, issue 22 item 3): the attacks on any lock view shared between commands.

Round 55 left one route to a cheaper session command: one lock view shared by the pool's inits
(or one prepared tree cloned into each, ``open_tree(OPEN_TREE_CLONE)``), replaced only when the
host's mount table changes. Either shares the overlay's superblock, and an overlay caches what
it looked up: on this kernel (6.18) a long-lived overlay of a host directory kept serving a file
the host had replaced by a rename (the old content), a file the host had deleted, and missed a
file the host created after a lookup had failed there (3 of 3; docs/performance.md, "Round 56").
None of these touch the mount table. So each command must see the host's changes made before it
started, through a view nobody looked through before it, and no command can change the view the
next one gets. Both held on this tree (each init builds its own view); they are here so that a
view shared later fails them, C init and Python init alike.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy, _static_build, _zinit
from sandbox.bwrap import BwrapBackend
from tests._bwrap_session import require_bwrap, supervised

pytestmark = pytest.mark.bwrap

#: More commands than the backend's warm pool (3): inits set up before the host's change and after.
_AFTER = 5


@pytest.fixture
def host_dir() -> Iterator[Path]:
    """A host directory the session shows read-only, through its lock view (/var/tmp is not a
    writable root: covered by the overlay of /)."""
    path = Path(tempfile.mkdtemp(prefix="shellrt-r56-zyg23-", dir="/var/tmp"))
    path.chmod(0o755)  # the sandbox runs as a leased uid
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _init(monkeypatch: pytest.MonkeyPatch, init: str) -> None:
    monkeypatch.setenv(_zinit.INIT_ENV, init)
    monkeypatch.setattr(_zinit, "_program", None)  # decided again for this init
    monkeypatch.setattr(_static_build, "_built", {})


@pytest.mark.parametrize("init", ["c", "python"])
def test_each_command_sees_the_hosts_changes_made_before_it(
    tmp_path: Path, host_dir: Path, monkeypatch: pytest.MonkeyPatch, init: str
) -> None:
    """A file replaced by a rename, a file deleted and a file created where a lookup had failed:
    every command after the change sees all three as the host left them."""
    require_bwrap()
    _init(monkeypatch, init)
    ws = tmp_path / "ws"
    ws.mkdir()
    (host_dir / "replaced").write_text("old\n")
    (host_dir / "deleted").write_text("here\n")
    probe = f"cd {host_dir} && for n in replaced deleted created; do echo $n=$(cat $n 2>/dev/null || echo none); done"
    host_dev = os.stat(host_dir / "replaced").st_dev
    outs: list[str] = []

    async def main() -> None:
        backend = BwrapBackend(BwrapConfig(persistent=True), SandboxPolicy(workspace=ws))
        async with supervised(backend, tmp_path / "s") as sup:
            assert backend._zygote is not None, "the session must run under its zygote here"
            seen = await sup.run(f"stat -c %d {host_dir}/replaced; {probe}", timeout_s=60)
            assert seen.exit_code == 0, seen.preview
            dev, *before = seen.preview.split()
            # Through the view (an overlay's own device), or the test proves nothing.
            assert int(dev) != host_dev, "the host directory is not seen through the lock view"
            assert before == ["replaced=old", "deleted=here", "created=none"], before
            (host_dir / "replaced.new").write_text("new\n")
            os.rename(host_dir / "replaced.new", host_dir / "replaced")
            (host_dir / "deleted").unlink()
            (host_dir / "created").write_text("made\n")
            for _ in range(_AFTER):
                result = await sup.run(probe, timeout_s=60)
                outs.append(f"{result.exit_code}:{' '.join(result.preview.split())}")

    anyio.run(main)
    assert outs == ["0:replaced=new deleted=none created=made"] * _AFTER, outs


@pytest.mark.parametrize("init", ["c", "python"])
def test_no_command_changes_the_view_the_next_one_gets(
    tmp_path: Path, host_dir: Path, monkeypatch: pytest.MonkeyPatch, init: str
) -> None:
    """A command that writes, makes, renames and mounts in the view and its assembly place, and
    leaves a process behind in it: nothing of it reaches the next commands' views."""
    require_bwrap()
    _init(monkeypatch, init)
    ws = tmp_path / "ws"
    ws.mkdir()
    (host_dir / "kept").write_text("host\n")
    lv = "/dev/.shellrt-lockview"
    attack = (
        f"echo evil > {host_dir}/kept; echo evil > {host_dir}/planted; mv {host_dir}/kept {host_dir}/moved;"
        f" mkdir {lv}/h/x; touch {lv}/e/x; mount -t tmpfs none {host_dir};"
        f" (cd {host_dir} && setsid sleep 30 </dev/null >/dev/null 2>&1 &); true"
    )
    probe = f"cat {host_dir}/kept; ls -A {host_dir} {lv}/h {lv}/e | tr '\\n' ' '"
    outs: list[str] = []

    async def main() -> None:
        backend = BwrapBackend(BwrapConfig(persistent=True), SandboxPolicy(workspace=ws))
        async with supervised(backend, tmp_path / "s") as sup:
            assert backend._zygote is not None, "the session must run under its zygote here"
            await sup.run(attack, timeout_s=60)
            for _ in range(_AFTER):
                result = await sup.run(probe, timeout_s=60)
                outs.append(f"{result.exit_code}:{' '.join(result.preview.split())}")

    anyio.run(main)
    want = f"0:host {lv}/e: {lv}/h: {host_dir}: kept"  # ls sorts its operands
    assert outs == [want] * _AFTER, outs
    assert (host_dir / "kept").read_text() == "host\n" and sorted(os.listdir(host_dir)) == ["kept"]
