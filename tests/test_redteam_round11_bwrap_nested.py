"""Red team round 11 (bwrap): a writable root inside another, reached through a renamed directory.

With the workspace ``ws`` and a writable root ``ws/a/b`` inside it, ``ws/a/b`` is a mount point
(it cannot be renamed) but ``ws/a`` was a plain directory of the workspace: a command renamed it
away and put a symlink to a host directory in its place. Every later bwrap start binds
``ws/a/b`` by path, so the symlink's target (``outside/b``) became a writable root of every
later command (per command at once; the zygote at its next start). Now each directory between
the two roots is a mount point too (`sandbox._nestedroots`). Failed before (per command: the
write landed in ``outside/b``; the rename succeeded in both modes).
"""

from __future__ import annotations

import os
import shutil
import tempfile
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


@pytest.fixture
def places() -> Iterator[tuple[Path, Path, Path]]:
    """A workspace with a writable root two levels inside it, and a directory outside both."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    base = Path(tempfile.mkdtemp(prefix="rt11-nested-", dir="/var/tmp"))
    base.chmod(0o755)
    ws, outside = base / "ws", base / "outside"
    (ws / "a" / "b").mkdir(parents=True, mode=0o755)
    (ws / "a" / "b" / "mine.txt").write_text("rt11-inner\n")
    (outside / "b").mkdir(parents=True, mode=0o755)
    (base / "s").mkdir()
    try:
        yield ws, outside, base / "s"
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("persistent", MODES)
def test_the_way_to_an_inner_root_cannot_be_swapped(
    places: tuple[Path, Path, Path], persistent: bool
) -> None:
    ws, outside, session = places

    async def main() -> tuple[str, str]:
        policy = SandboxPolicy(workspace=ws, writable_roots=(ws / "a" / "b",))
        backend = create_backend(BwrapConfig(persistent=persistent), policy)
        await backend.start()
        try:
            async with Supervisor(backend, session_dir=session) as sup:
                swap = await sup.run(
                    f"cd {ws} && mv a a2 2>&1 && ln -s {outside} a && echo SWAPPED; echo swap-done",
                    timeout_s=60,
                )
                after = await sup.run(
                    f"echo rt11-pwned > {ws}/a/b/pwned 2>&1; cat {ws}/a/b/mine.txt; echo after-done",
                    timeout_s=60,
                )
                assert swap.output_path is not None and after.output_path is not None
                return swap.output_path.read_text(), after.output_path.read_text()
        finally:
            await backend.close()

    swap, after = anyio.run(main)
    assert "swap-done" in swap and "after-done" in after, (swap, after)
    assert not (outside / "b" / "pwned").exists(), "a write to the inner root landed outside the sandbox"
    assert "SWAPPED" not in swap and (ws / "a").is_dir() and not (ws / "a").is_symlink(), swap
    assert (ws / "a" / "b" / "pwned").read_text() == "rt11-pwned\n" and "rt11-inner" in after, after


def test_it_holds_for_an_unprivileged_caller() -> None:
    require(
        os.geteuid() == 0, "preparing a run as uid 65534 needs root (as non-root, run this file directly)"
    )
    require(shutil.which("setpriv") is not None and shutil.which("bwrap") is not None, "setpriv and bwrap")
    name = "test_the_way_to_an_inner_root_cannot_be_swapped"
    collected, outcome = _nonroot.run_as_nobody(
        [f"tests/{Path(__file__).name}::{name}"], collect_args=[f"{__file__}::{name}"]
    )
    summary = outcome.output[-4000:]
    assert outcome.returncode == 0 and outcome.tests == collected.items and not outcome.skipped, summary
