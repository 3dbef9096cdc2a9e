"""Red team, round 38 (review2): an Inspect config's workspace that is a file while judged.

Round 38 (batch) pinned an Inspect config file's ``workspace`` to the directory the floor judged;
when that directory could not be opened (``opened_as`` raised), the settings went on unpinned and
the judgement was whatever ``first_private`` said of the path. Of a *file* it says nothing is
private (the copy refuses files). So the dataset's owner points ``ws`` at a file of theirs while
the floor judges, then at a root-only directory: the sample's copy resolved ``ws`` again, pinned
to nothing, and the sample read root's file. The batch floor refuses such a workspace outright.
Real Inspect sample (`sample_init`), bwrap, as root; FAIL, not skip, under CI=true.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from tests._shared_dir import world_readable_dir
from tests.conftest import require

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the floor judges a workspace only for root")

_SECRET = "root-only-secret"


@pytest.fixture
def shared() -> Iterator[Path]:
    with world_readable_dir("shellrt-r38-review2-insp-") as path:
        yield path


def _swap_link(ws: Path, target: Path) -> None:
    tmp = ws.with_name(ws.name + ".new")
    tmp.symlink_to(target)
    os.replace(tmp, ws)


def test_a_workspace_that_was_a_file_while_judged_is_refused(shared: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Failed before (1 of 1): the sample read the root-only file."""
    from inspect_ai._util.error import PrerequisiteError

    from shellrt.integrations import _inspect_config
    from shellrt.integrations.inspect import ShellrtSandboxEnvironment

    require(shutil.which("bwrap") is not None, "bubblewrap is needed for the sample's sandbox")
    vault = shared / "vault"
    vault.mkdir(mode=0o700)
    inner = vault / "inner"
    inner.mkdir(mode=0o755)
    (inner / "data.txt").write_text(_SECRET + "\n")
    (inner / "data.txt").chmod(0o644)
    plain = shared / "plain.txt"
    plain.write_text("a file\n")
    ws = shared / "ws"
    ws.symlink_to(plain)
    config = shared / "cfg.json"
    config.write_text('{"sandbox": "bwrap", "workspace": "ws"}')
    judge = _inspect_config.first_private

    def judged_then_swapped(*args: object, **kwargs: object) -> str | None:
        verdict = judge(*args, **kwargs)  # type: ignore[arg-type]
        _swap_link(ws, inner)
        return verdict

    monkeypatch.setattr(_inspect_config, "first_private", judged_then_swapped)

    async def main() -> str:
        envs = await ShellrtSandboxEnvironment.sample_init("t", str(config), {})
        try:
            return (await envs["default"].exec(["cat", "data.txt"])).stdout
        finally:
            await ShellrtSandboxEnvironment.sample_cleanup("t", str(config), envs, False)

    with pytest.raises(PrerequisiteError, match="cannot be opened as a directory"):
        read = anyio.run(main)
        assert _SECRET not in read, read


def test_a_root_only_file_moved_into_the_judged_workspace_is_not_copied(
    shared: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed before (1 of 1): the sample read root's 0600 file, renamed into the workspace by its
    owner (uid 65534) right after the judgement (`…_moved_in.py`'s attack on the Inspect copy)."""
    from shellrt.integrations import _inspect_config
    from shellrt.integrations.inspect import ShellrtSandboxEnvironment
    from tests.test_redteam_round38_review2_moved_in import _as_nobody_rename

    require(shutil.which("bwrap") is not None, "bubblewrap is needed for the sample's sandbox")
    dl = shared / "dl"
    dl.mkdir(mode=0o755)
    ws = dl / "ws"
    ws.mkdir(mode=0o755)
    (ws / "data.txt").write_text("public\n")
    (ws / "data.txt").chmod(0o644)
    secret = dl / "secret.txt"
    secret.write_text(_SECRET + "\n")
    secret.chmod(0o600)
    for path in (dl, ws, ws / "data.txt"):
        os.chown(path, 65534, 65534)
    config = dl / "cfg.json"
    config.write_text('{"sandbox": "bwrap", "workspace": "ws"}')
    judge = _inspect_config.first_private

    def judged_then_moved(*args: object, **kwargs: object) -> str | None:
        if (ws / "moved.txt").exists():  # judged again (each load of the config): out while it looks
            _as_nobody_rename(ws / "moved.txt", secret)
        verdict = judge(*args, **kwargs)  # type: ignore[arg-type]
        _as_nobody_rename(secret, ws / "moved.txt")
        return verdict

    monkeypatch.setattr(_inspect_config, "first_private", judged_then_moved)

    async def main() -> str:
        envs = await ShellrtSandboxEnvironment.sample_init("t", str(config), {})
        try:
            return (await envs["default"].exec(["cat", "moved.txt"])).stdout
        finally:
            await ShellrtSandboxEnvironment.sample_cleanup("t", str(config), envs, False)

    with pytest.raises(ValueError, match="only its owner reads"):  # the sample's copy refuses it
        read = anyio.run(main)
        assert _SECRET not in read, read
