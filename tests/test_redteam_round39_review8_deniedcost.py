"""Red team, round 39 (review8): what each command's staleness check costs per denied path.

`BwrapBackend._denied_kinds` runs before every session command (`_zygote_stale`). locks2 added each
denied file's identity from stats already taken (no cost), but the check also resolved every
read-denied path (``os.path.realpath``: a ``lstat`` per component) to tell shellrt's own meeting
places apart from denied ones: with 200 denied paths ~50-67 ms a command at load 17. Only a place
that is the same file as a denied one needs resolving now.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import sandbox.bwrap as bwrap_mod
from sandbox import BwrapConfig, SandboxPolicy
from sandbox.bwrap import BwrapBackend


def test_the_check_resolves_no_denied_path_per_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Failed before: 50 ``realpath`` calls a check (one per read-denied path), each command."""
    ws = tmp_path / "ws"
    ws.mkdir()
    denied = []
    for i in range(50):
        (ws / f"d{i}").write_text("x")
        denied.append(ws / f"d{i}")
    backend = BwrapBackend(BwrapConfig(persistent=True), SandboxPolicy(workspace=ws, read_denied=tuple(denied)))
    backend._denied_kinds()  # the first look (alias searches) is the session start's
    calls = []
    real = os.path.realpath

    def counted(path: str, *args: object, **kwargs: object) -> str:
        calls.append(path)
        return real(path)

    monkeypatch.setattr(bwrap_mod.os.path, "realpath", counted)
    backend._denied_kinds()
    assert len(calls) < 5, f"{len(calls)} realpath calls in one command's check"


def test_a_place_that_is_a_denied_path_stays_out(tmp_path: Path) -> None:
    """The guard: a meeting place named by a denied path (through a link, or missing) is not masked
    twice; one that is not denied is kept."""
    place = tmp_path / "place"
    place.mkdir()
    other = tmp_path / "other"
    other.mkdir()
    link = tmp_path / "link"
    link.symlink_to(place)
    missing = tmp_path / "missing"
    assert bwrap_mod._not_denied([place, other], [link], [os.stat(link)]) == [other]
    assert bwrap_mod._not_denied([missing, other], [missing], [None]) == [other]
    assert bwrap_mod._not_denied([place, other], [], []) == [place, other]
