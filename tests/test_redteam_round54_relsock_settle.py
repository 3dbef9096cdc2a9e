"""Red team round 54 (relsock): a burst of host churn below a read-denied directory refused an honest
command.

`sandbox._maskaliases._walk_settled` proves a walk saw the whole tree by one pass finding every
directory as it listed it (`_settle`). It gave up after 20 passes a walk and 3 walks: a host program
making and removing files in a few directories (a build, a log rotation) refused about 1 walk in 4,571
on a loaded host (red team round 53, hostchurn, Left), whenever its churn outlasted those 60 passes --
a fraction of a millisecond each. The proof is unchanged; passes now go on for a bounded time
(`_SETTLE_S`) as well as a count, so a burst of churn is waited out and only churn that never pauses
is refused (fail closed, as before).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox import _maskaliases
from sandbox.errors import SandboxExecError


def _tree(tmp_path: Path) -> Path:
    top = tmp_path / "denied"
    for i in range(10):
        (top / f"s{i}").mkdir(parents=True)
        for k in range(3):
            (top / f"s{i}" / f"keep{k}").write_text("x")
    return top


def _churn_for(monkeypatch: pytest.MonkeyPatch, top: Path, changes: int | None) -> list[int]:
    """Each listing of a directory is followed by a change to a directory of the tree (a file made and
    removed there, as a host program does), ``changes`` times (None: for ever)."""
    made = [0]
    real_walk, real_relist = _maskaliases._walk, _maskaliases._relist

    def change() -> None:
        if changes is None or made[0] < changes:
            churned = top / f"s{made[0] % 10}" / "churn"
            churned.write_text("x")
            churned.unlink()
            made[0] += 1

    def walk(*args: object, **kwargs: object) -> Iterator[tuple[Path, os.stat_result]]:
        yield from real_walk(*args, **kwargs)  # type: ignore[arg-type]
        change()

    def relist(*args: object) -> Iterator[tuple[Path, os.stat_result]]:
        yield from real_relist(*args)  # type: ignore[arg-type]
        change()

    monkeypatch.setattr(_maskaliases, "_walk", walk)
    monkeypatch.setattr(_maskaliases, "_relist", relist)
    return made


def test_a_burst_of_churn_longer_than_sixty_passes_is_waited_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed before (1 of 1): 80 changes, one after each listing, refused the walk; now it settles
    and finds every file."""
    top = _tree(tmp_path)
    made = _churn_for(monkeypatch, top, 80)
    found = _maskaliases._walk_settled(top, _maskaliases._Budget())
    assert made[0] == 80
    assert len({p for p, _st in found if p.name.startswith("keep")}) == 30  # relisted ones come again


def test_churn_that_never_pauses_is_still_refused_in_bounded_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Held: no pass ever finds the tree as listed, so nothing proves the walk complete: refused (fail
    closed), after about `_COUNT_SEARCHES` x `_SETTLE_S`."""
    top = _tree(tmp_path)
    _churn_for(monkeypatch, top, None)
    start = time.monotonic()
    with pytest.raises(SandboxExecError):
        _maskaliases._walk_settled(top, _maskaliases._Budget())
    took = time.monotonic() - start
    assert took < _maskaliases._COUNT_SEARCHES * getattr(_maskaliases, "_SETTLE_S", 0.0) + 5, took
