"""Red team round 11 (bwrap): the directory holding the session's /tmp, writable from the sandbox.

The session's /tmp is a host directory (``<temp dir>/shellrt-bwrap-tmp-XXXX/tmp``) bound at /tmp,
and the state dir (``<temp dir>/shellrt-bwrap-XXXX``) is bound at its own path. With the host's
temp dir inside a writable root (``TMPDIR`` under the workspace: CI runners, ``direnv``, a
project-local tmp), the workspace's bind showed both holders writable: a command renamed the
session's /tmp away and put a symlink to any host directory in its place. Every later bwrap
start binds /tmp *by that path* -- the next command (per command; the zygote's next start) got
the symlink's target as its writable /tmp, and the file tools, which reach /tmp through the same
host path, read and wrote there too. A command could also plant directories in the temp dir
that later sessions sweep and read. Now the temp dir is hidden again after the roots' binds
(and the holder of the session's /tmp bound read-only onto itself when the temp dir is a root
itself). Failed before (per command: ``pwned`` landed in the outside directory).

Only a non-root caller is exposed (a root caller's holders are 0700 root, closed to the sandbox
uid); `test_it_holds_for_an_unprivileged_caller` runs the file as uid 65534.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.factory import create_backend
from shellrt.supervisor import Supervisor
from tests import _nonroot
from tests.conftest import require

MODES = [pytest.param(False, id="per-command"), pytest.param(True, id="session")]

#: Swaps the session's /tmp for a symlink to ``$1`` wherever a holder of it is writable, and
#: plants a fake orphan in the temp dir; prints what it managed.
_SWAP = r"""
for holder in "$2"/shellrt-bwrap-tmp-*/; do
  if mv "$holder/tmp" "$holder/old" 2>/dev/null && ln -s "$1" "$holder/tmp" 2>/dev/null; then
    echo "SWAPPED $holder"
  fi
done
mkdir "$2/shellrt-bwrap-planted" 2>/dev/null && echo PLANTED
echo swap-done
"""


@pytest.fixture
def places(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Path, Path, Path]]:
    """A workspace whose ``.tmp`` is the host's temp dir, a directory outside every root and
    a place for the session directory."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    base = Path(tempfile.mkdtemp(prefix="rt11-tmpswap-", dir="/var/tmp"))
    base.chmod(0o755)
    ws, outside = base / "ws", base / "outside"
    ws.mkdir(mode=0o755)
    (ws / ".tmp").mkdir(mode=0o755)
    outside.mkdir(mode=0o755)
    (base / "s").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(ws / ".tmp"))
    try:
        yield ws, ws / ".tmp", outside, base / "s"
    finally:
        shutil.rmtree(base, ignore_errors=True)


async def _attack(ws: Path, temp: Path, outside: Path, persistent: bool, session: Path) -> tuple[str, str]:
    backend = create_backend(BwrapConfig(persistent=persistent), SandboxPolicy(workspace=ws))
    await backend.start()
    try:
        async with Supervisor(backend, session_dir=session) as sup:
            swap = await sup.run(f"sh -c '{_SWAP}' sh {outside} {temp} 2>&1", timeout_s=60)
            # A zygote restarts when a host socket appears; per command every start binds anew.
            after = await sup.run(
                "echo rt11-pwned > /tmp/pwned 2>&1; ls -a /tmp; echo after-done", timeout_s=60
            )
            assert swap.output_path is not None and after.output_path is not None
            return swap.output_path.read_text(), after.output_path.read_text()
    finally:
        await backend.close()


@pytest.mark.parametrize("persistent", MODES)
def test_the_session_tmp_cannot_be_swapped_from_inside(
    places: tuple[Path, Path, Path, Path], persistent: bool
) -> None:
    ws, temp, outside, session = places
    swap, after = anyio.run(_attack, ws, temp, outside, persistent, session)
    assert "swap-done" in swap and "after-done" in after, (swap, after)
    assert not (outside / "pwned").exists(), "a command's /tmp write landed outside the sandbox"
    assert os.listdir(outside) == [], os.listdir(outside)
    assert "SWAPPED" not in swap, swap
    # Planted in the sandbox's own tmpfs at most: never in the host's temp dir.
    assert not (temp / "shellrt-bwrap-planted").exists(), swap
    assert "pwned" in after, after  # the session's own /tmp still works


def test_the_start_cost_of_the_hidden_temp_dir(places: tuple[Path, Path, Path, Path]) -> None:
    """The hide is one tmpfs per start, only when the temp dir lies in a writable root: what a
    per-command start costs with it (printed; docs/security.md has the numbers)."""
    ws, _temp, _outside, session = places

    async def timed() -> float:
        backend = create_backend(BwrapConfig(persistent=False), SandboxPolicy(workspace=ws))
        await backend.start()
        try:
            async with Supervisor(backend, session_dir=session) as sup:
                await sup.run("true", timeout_s=60)
                start = time.perf_counter()
                for _ in range(10):
                    result = await sup.run("true", timeout_s=60)
                    assert result.exit_code == 0
                return (time.perf_counter() - start) / 10
        finally:
            await backend.close()

    per_start = anyio.run(timed)
    print(f"per-command start with TMPDIR in the workspace: {per_start * 1000:.1f} ms")
    assert per_start < 5.0


def test_it_holds_for_an_unprivileged_caller() -> None:
    require(
        os.geteuid() == 0, "preparing a run as uid 65534 needs root (as non-root, run this file directly)"
    )
    require(shutil.which("setpriv") is not None and shutil.which("bwrap") is not None, "setpriv and bwrap")
    name = "test_the_session_tmp_cannot_be_swapped_from_inside"
    collected, outcome = _nonroot.run_as_nobody(
        [f"tests/{Path(__file__).name}::{name}"], collect_args=[f"{__file__}::{name}"]
    )
    summary = outcome.output[-4000:]
    assert outcome.returncode == 0 and outcome.tests == collected.items and not outcome.skipped, summary


def test_the_usual_set_ups_start_with_the_same_flags(tmp_path: Path) -> None:
    """The temp dir outside every writable root, roots apart: not one flag more per start."""
    from sandbox._nestedroots import nested_root_args
    from sandbox._tempholder import temp_holder_args

    ws, extra = tmp_path / "ws", tmp_path / "extra"
    ws.mkdir()
    extra.mkdir()
    session_tmp = Path(tempfile.gettempdir()) / "shellrt-bwrap-tmp-x" / "tmp"
    assert temp_holder_args((ws, extra), session_tmp) == []
    assert nested_root_args((ws, extra), {}) == []
    (ws / "a" / "b").mkdir(parents=True)
    assert nested_root_args((ws, ws / "a" / "b"), {}) == [
        "--bind", str(ws / "a"), str(ws / "a"), "--bind", str(ws / "a" / "b"), str(ws / "a" / "b")
    ]  # fmt: skip
