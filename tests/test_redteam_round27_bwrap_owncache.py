"""Red team, round 27 (bwrap): shellrt's own places to mask were worked out before every command.

Round 26 (wave 3) masks the budget meeting places and static program caches a sandbox would show;
`sandbox.bwrap._own_masks` named them with ~36 ``lstat``s and ``realpath``s on every command's path
(`_denied_kinds`). Now they are worked out when the zygote starts and again only once a name on
their way changed (`sandbox._bwrap_owncache`, inotify): a place made later still replaces the zygote
before the next command, which sees it masked.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy, _budget_meet
from sandbox import bwrap as bwrap_mod
from sandbox.bwrap import BwrapBackend
from tests import _nonroot
from tests._bwrap_session import probe_lines, require_bwrap, supervised
from tests.conftest import require

pytestmark = pytest.mark.bwrap


def test_own_places_are_looked_at_once_until_one_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed before (1 of 1): 4 commands worked the places out 6 times (start, then each command);
    now once, and a meeting place made in the workspace before the fifth is looked at again and
    masked for it."""
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir(mode=0o755)
    monkeypatch.setenv("HOME", str(ws))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    calls: list[int] = []
    real = bwrap_mod._own_masks

    def counted(roots: tuple[Path, ...] | list[Path]) -> list[Path]:
        calls.append(1)
        return real(roots)

    monkeypatch.setattr(bwrap_mod, "_own_masks", counted)
    place = ws / f"shellrt-budget-{os.geteuid()}"  # as if another process's TMPDIR were the workspace

    async def main() -> tuple[int, str]:
        backend = BwrapBackend(BwrapConfig(persistent=True), SandboxPolicy(workspace=ws))
        async with supervised(backend, tmp_path / "s") as sup:
            assert backend._zygote is not None, "the session must run under its zygote here"
            for _ in range(4):
                assert (await sup.run("true", timeout_s=60)).exit_code == 0
            before = len(calls)
            place.mkdir(mode=0o700, parents=True)
            (place / "note").write_text("the holder's")
            out = await sup.run(
                f"ls -A {place} && echo LISTED; touch {place}/squat || echo REFUSED", timeout_s=60
            )
            return before, out.preview

    before, out = anyio.run(main)
    assert before <= 2, f"worked out {before} times for 4 commands"
    assert "note" not in out and "REFUSED" in out, out
    assert not (place / "squat").exists(), out
    assert os.listdir(place) == ["note"]


@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
def test_another_processs_places_in_a_writable_root_are_hidden(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, persistent: bool
) -> None:
    """Failed before (root 2 of 2): the places of another shellrt process of the uid whose ``HOME``
    or ``TMPDIR`` is the workspace (its static cache and meeting place below ``.cache/shellrt``, its
    temp-path places) were not this process's own places and were shown, writable."""
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir(mode=0o755)
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    places = [
        ws.joinpath(*_budget_meet.home_place()),
        ws / f"shellrt-budget-{os.geteuid()}",
        ws / f"shellrt-cache-{os.getuid()}",
    ]
    for place in places:
        place.mkdir(mode=0o700, parents=True)
        (place / "note").write_text("the other process's")
    probe = (
        "import os\n"
        f"for p in {[str(p) for p in places]!r}:\n"
        "    try: print('SEES', os.path.basename(p), os.listdir(p))\n"
        "    except OSError as e: print('SEES', os.path.basename(p), e.strerror)\n"
        "    try: open(os.path.join(p, 'squat'), 'w').close(); print('MADE', p)\n"
        "    except OSError as e: print('REFUSED', e.strerror)\n"
    )
    _fields, out = probe_lines(ws, tmp_path / "s", probe, persistent=persistent)
    assert "note" not in out and "MADE" not in out, out
    assert all(os.listdir(place) == ["note"] for place in places), out


def test_it_holds_for_an_unprivileged_caller() -> None:
    """The meeting places are a non-root caller's (root has no rendezvous): both tests as uid 65534."""
    require(
        os.geteuid() == 0, "preparing a run as uid 65534 needs root (as non-root, run this file directly)"
    )
    require(shutil.which("setpriv") is not None, "setpriv (util-linux)")
    names = [
        "test_own_places_are_looked_at_once_until_one_changes",
        "test_another_processs_places_in_a_writable_root_are_hidden",
    ]
    collected, outcome = _nonroot.run_as_nobody(
        [f"tests/{Path(__file__).name}::{n}" for n in names], collect_args=[f"{__file__}::{n}" for n in names]
    )
    _nonroot.assert_all_held(collected, outcome)
