"""Red team round 39 (lead): the orphan sweep of every start costs one call a kept directory.

Every sandbox start sweeps the temp dir for `OwnedDir`s whose owner is gone (`sweep_known_orphans`).
Kept ones (batch artifacts: their lock removed, `OwnedDir.keep`) pile up there: 700 of them made the
sweep ~80 ms of every ``shellrt run`` here (a stat, an lstat, a stat and a failed open each), which
took ``run --sandbox local -- true`` past its start-up budget. Now one listing gives the kinds and a
kept directory costs one failed open; an orphan is still removed, a young or locked one kept.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sandbox import _scratch

_KEPT = 2000


def _counting(calls: list[str], name: str, real: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        calls.append(name)
        return real(*args, **kwargs)

    return wrapper


def test_kept_directories_cost_one_call_each(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    old = time.time() - 3600
    for i in range(_KEPT):
        kept = tmp_path / f"shellrt-batch-artifacts-{i}"
        kept.mkdir()
        os.utime(kept, (old, old))
    calls: list[str] = []
    for name in ("stat", "lstat", "open"):
        monkeypatch.setattr(os, name, _counting(calls, name, getattr(os, name)))
    assert _scratch.sweep_orphans("shellrt-batch-", tmp_path) == []
    monkeypatch.undo()
    assert len(calls) <= _KEPT * 1.1, f"{len(calls)} calls for {_KEPT} kept directories ({calls[:6]}...)"
    assert len(list(tmp_path.iterdir())) == _KEPT


def test_orphans_go_and_live_or_young_ones_stay(tmp_path: Path) -> None:
    old = time.time() - 3600
    made = {}
    for name in ("orphan", "locked", "young"):
        d = tmp_path / f"shellrt-run-{name}"
        d.mkdir()
        (d / ".owner.lock").write_text("")
        made[name] = d
    fd = os.open(made["locked"] / ".owner.lock", os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        for name in ("orphan", "locked"):
            os.utime(made[name], (old, old))
        (tmp_path / "shellrt-run-link").symlink_to(made["orphan"])
        removed = _scratch.sweep_orphans("shellrt-run-", tmp_path)
    finally:
        os.close(fd)
    assert removed == [made["orphan"]]
    assert made["locked"].exists() and made["young"].exists() and not made["orphan"].exists()
