"""Red team, round 38 (batch): a workspace source swapped between the floor's judgement and the copy.

As root, the operator's floor refuses a row whose workspace holds what only its owner reads (the
harness copies as root: round 17). It judged the path as it resolved then; the worker resolved the
path again when it copied, a moment later. Whoever owns the dataset's directory (a local user's
download) swaps a link, or the judged directory itself, for a root-only directory in between
(a loop of renames wins often): the task got the root-only files in its workspace. Played here by
a floor that swaps right after judging, and by swapping between `TaskFloor.apply` and the run.
Real bwrap tasks, as root (the floor judges only for a root harness); FAIL, not skip, under CI=true.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from shellrt.batch import Task, TaskFloor, run_sync
from tests._shared_dir import world_readable_dir
from tests.conftest import require

#: As round 15's: a non-root harness copies with its own rights, which are its sandbox user's.
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="root hosts copy with root's rights")

_SECRET = "root-only-secret"


@pytest.fixture
def shared() -> Iterator[Path]:
    """A directory every user reaches (pytest's own is root-only), as a downloaded dataset's."""
    with world_readable_dir("shellrt-r38-swap-") as path:
        yield path


def _dataset(tmp_path: Path) -> tuple[Path, Path, Path]:
    """``public`` (readable by all), ``vault/inner`` (inside a root-only directory), ``ws`` -> public."""
    public = tmp_path / "public"
    public.mkdir(mode=0o755)
    (public / "data.txt").write_text("public\n")
    (public / "data.txt").chmod(0o644)
    vault = tmp_path / "vault"
    vault.mkdir(mode=0o700)
    inner = vault / "inner"
    inner.mkdir(mode=0o755)
    (inner / "data.txt").write_text(_SECRET + "\n")
    (inner / "data.txt").chmod(0o644)  # readable, but only root reaches it
    ws = tmp_path / "ws"
    ws.symlink_to(public)
    return public, inner, ws


def _task(ws: Path) -> Task:
    return Task.model_validate(
        {"id": "t", "sandbox": "bwrap", "workspace": str(ws), "commands": ["cat data.txt"]}
    )


def _swap_link(ws: Path, target: Path) -> None:
    tmp = ws.with_name(ws.name + ".new")
    tmp.symlink_to(target)
    os.replace(tmp, ws)


def _swap_dir(public: Path, target: Path) -> None:
    public.rename(public.with_name("public.old"))
    public.symlink_to(target)


def _require_root() -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is needed for batch tasks")


def _printed(results: list) -> str:
    return "".join(c.preview or "" for r in results for c in r.commands)


@dataclass(frozen=True)
class _SwappingFloor(TaskFloor):
    """The operator's floor; the dataset's owner swaps right after it judged (the race, won)."""

    swap: tuple[Path, Path] | None = None
    how: str = "link"

    def apply(self, task: Task) -> Task:
        applied = super().apply(task)
        if self.swap is not None:
            (_swap_link if self.how == "link" else _swap_dir)(*self.swap)
        return applied


def test_a_link_swapped_after_the_floor_judged_it_copies_nothing_private(shared: Path) -> None:
    """Failed before (1 of 1): the task printed the root-only file."""
    _require_root()
    _, inner, ws = _dataset(shared)
    floor = _SwappingFloor(allow_backend_keys=True, allow_private_workspace=False, swap=(ws, inner))
    results = run_sync([_task(ws)], floor=floor, output_budget=None, default_limits=None)
    assert _SECRET not in _printed(results), results
    assert [r.status for r in results] == ["ok"] and _printed(results) == "public\n", results


def test_the_judged_directory_swapped_for_a_link_is_refused(shared: Path) -> None:
    """Failed before (1 of 1): the judged directory's name, made a link to the root-only one, was
    copied."""
    _require_root()
    public, inner, ws = _dataset(shared)
    floor = _SwappingFloor(allow_backend_keys=True, allow_private_workspace=False, swap=(public, inner), how="dir")
    results = run_sync([_task(ws)], floor=floor, output_budget=None, default_limits=None)
    assert _SECRET not in _printed(results), results
    assert [r.status for r in results] == ["error"], results
    assert "changed since" in (results[0].error or ""), results[0].error


def test_a_task_the_floor_applied_keeps_what_was_judged(shared: Path) -> None:
    """Failed before (1 of 1): `TaskFloor.apply` then a run without a floor (a harness applying it
    itself) copied what the link named at run time."""
    _require_root()
    _, inner, ws = _dataset(shared)
    applied = TaskFloor(allow_backend_keys=True, allow_private_workspace=False).apply(_task(ws))
    _swap_link(ws, inner)
    results = run_sync([applied], output_budget=None, default_limits=None)
    assert _SECRET not in _printed(results), results


def test_a_private_source_is_still_refused(shared: Path) -> None:
    """Guard (passed before): the floor refuses the root-only directory named outright."""
    _require_root()
    _, inner, _ = _dataset(shared)
    refused: list[str] = []
    results = run_sync(
        [_task(inner)],
        floor=TaskFloor(allow_backend_keys=True, allow_private_workspace=False),
        on_refused=lambda t, r: refused.append(str(r)),
        output_budget=None,
        default_limits=None,
    )
    assert results == [] and refused and "vault" in refused[0], (results, refused)


def _inspect_cat(config: Path, monkeypatch: pytest.MonkeyPatch, swap: tuple[Path, Path], how: str) -> str:
    """What a sample whose dataset names ``config`` reads from its workspace; the dataset's owner
    swaps right after the config floor's judgement (the race, won)."""
    import anyio

    from shellrt.integrations import _inspect_config
    from shellrt.integrations.inspect import ShellrtSandboxEnvironment

    judge = _inspect_config.first_private

    def judged_then_swapped(*args: object, **kwargs: object) -> str | None:
        verdict = judge(*args, **kwargs)  # type: ignore[arg-type]
        (_swap_link if how == "link" else _swap_dir)(*swap)
        return verdict

    monkeypatch.setattr(_inspect_config, "first_private", judged_then_swapped)

    async def main() -> str:
        envs = await ShellrtSandboxEnvironment.sample_init("t", str(config), {})
        try:
            return (await envs["default"].exec(["cat", "data.txt"])).stdout
        finally:
            await ShellrtSandboxEnvironment.sample_cleanup("t", str(config), envs, False)

    return anyio.run(main)


def test_an_inspect_config_workspace_swapped_after_the_floor_copies_what_was_judged(
    shared: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed before (1 of 1): the sample read the root-only file."""
    _require_root()
    _, inner, ws = _dataset(shared)
    config = shared / "cfg.json"
    config.write_text('{"sandbox": "bwrap", "workspace": "ws"}')
    assert _inspect_cat(config, monkeypatch, (ws, inner), "link") == "public\n"


def test_an_inspect_config_workspace_directory_swapped_is_refused(
    shared: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed before (1 of 1): the sample read the root-only file."""
    from inspect_ai._util.error import PrerequisiteError

    _require_root()
    public, inner, _ = _dataset(shared)
    config = shared / "cfg.json"
    config.write_text('{"sandbox": "bwrap", "workspace": "public"}')
    with pytest.raises(PrerequisiteError, match="changed while it was judged"):
        _inspect_cat(config, monkeypatch, (public, inner), "dir")
