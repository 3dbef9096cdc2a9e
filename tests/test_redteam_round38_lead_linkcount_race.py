"""Round 38 (lead): one search that raced a rename refused every later command of the session.

Round 38 (rules) refuses a bwrap command while a read-denied file has more hard links than the
names found for it (`sandbox._maskaliases.AliasFinder`, ``count_outside``): a link made outside the
roots mid-session. A search that raced a rename in the workspace (a directory holding one of the
names swapped away for an instant: round 10's pin race in CI104, a `mv` of a directory) missed a
name, and the refusal was kept until the denied file changed again -- every later command of the
session was refused (20 of 20 in CI104). A short count is now searched again (three searches)
before it refuses, and a refusal of this kind is searched again after a second rather than kept
for good; a link really made outside the roots still refuses (each search misses it).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from sandbox import _maskaliases
from sandbox._maskaliases import AliasFinder
from sandbox.errors import SandboxExecError


def _setup(tmp_path: Path) -> tuple[Path, Path, Path]:
    ws = tmp_path / "ws"
    (ws / "d").mkdir(parents=True)
    denied = ws / ".env"
    denied.write_text("secret\n")
    return ws, denied, ws / "d" / "x"


def test_a_search_that_missed_a_name_once_refuses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed before: the first search's miss was kept, and every later call raised."""
    ws, denied, link = _setup(tmp_path)
    finder = AliasFinder(count_outside=True)
    finder.aliases([denied], [os.stat(denied)], [ws])  # the start: one link
    os.link(denied, link)  # made mid-session inside the roots: masked, never refused
    real = AliasFinder._search
    calls = {"n": 0}

    def missing_once(
        self: AliasFinder, inside: list[tuple[Path, os.stat_result]], roots: list[Path]
    ) -> tuple[Path, ...]:
        calls["n"] += 1
        return () if calls["n"] == 1 else real(self, inside, roots)  # a racing rename hid d/x once

    monkeypatch.setattr(AliasFinder, "_search", missing_once)
    assert finder.aliases([denied], [os.stat(denied)], [ws]) == (link,)
    assert finder.aliases([denied], [os.stat(denied)], [ws]) == (link,)


def test_a_link_outside_the_roots_still_refuses(tmp_path: Path) -> None:
    """The guard kept: a name no search can find (outside the roots) refuses, every time."""
    ws, denied, _link = _setup(tmp_path)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    finder = AliasFinder(count_outside=True)
    finder.aliases([denied], [os.stat(denied)], [ws])
    os.link(denied, outside / "copy")
    for _ in range(2):
        with pytest.raises(SandboxExecError, match="another hard link outside the writable roots"):
            finder.aliases([denied], [os.stat(denied)], [ws])


def test_a_kept_refusal_is_searched_again_after_a_while(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A refusal is kept a short while (a search may cost a second), not for good: three unlucky
    searches refuse, a later command after `_REFUSAL_KEPT_S` is searched again and runs."""
    ws, denied, link = _setup(tmp_path)
    finder = AliasFinder(count_outside=True)
    finder.aliases([denied], [os.stat(denied)], [ws])
    os.link(denied, link)
    real = AliasFinder._search
    calls = {"n": 0}

    def missing_thrice(
        self: AliasFinder, inside: list[tuple[Path, os.stat_result]], roots: list[Path]
    ) -> tuple[Path, ...]:
        calls["n"] += 1
        return () if calls["n"] <= 3 else real(self, inside, roots)

    monkeypatch.setattr(AliasFinder, "_search", missing_thrice)
    with pytest.raises(SandboxExecError):
        finder.aliases([denied], [os.stat(denied)], [ws])
    monkeypatch.setattr(_maskaliases, "_REFUSAL_KEPT_S", 0.0, raising=False)
    time.sleep(0.01)
    assert finder.aliases([denied], [os.stat(denied)], [ws]) == (link,)
