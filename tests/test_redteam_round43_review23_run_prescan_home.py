"""Red team, round 43 (review23): ``shellrt run``'s write-deny pre-scan reads the user settings
where the real loader does.

The pre-scan (`shellrt.cli._run_write_deny`, round 16) looked for ``~/.shellrt/settings.json`` under
``$HOME`` as given (``Path.home()`` when empty), while the loader reads it under
`permissions.caller_home` (round 42): with ``HOME=~`` or a relative ``HOME`` it looked below the
current directory, with ``HOME=`` at ``/``, so the user's ``Edit(**/*.pem)`` deny was never loaded
and ``shellrt run`` kept the ``new.pem`` a command made.
"""

from __future__ import annotations

import json
import pwd
from pathlib import Path
from types import SimpleNamespace

import pytest

import shellrt.permissions.caller_home as caller_home_module
from shellrt.cli._run_write_deny import candidate_files, may_name_write_deny
from shellrt.permissions.sources import discover_files
from shellrt.supervisor._caller_home import caller_home as lean_caller_home


@pytest.mark.parametrize("home", ["~", "", "rel", "~/x"])
def test_the_pre_scan_finds_the_users_write_deny_under_the_loaders_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, home: str
) -> None:
    user_home = tmp_path / "home"
    (user_home / ".shellrt").mkdir(parents=True)
    (user_home / ".shellrt" / "settings.json").write_text(json.dumps({"permissions": {"deny": ["Edit(**/*.pem)"]}}))
    monkeypatch.setattr(pwd, "getpwuid", lambda _uid: SimpleNamespace(pw_dir=str(user_home)))
    monkeypatch.setenv("HOME", home)
    monkeypatch.delenv("SHELLRT_MANAGED_SETTINGS", raising=False)
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.chdir(ws)
    assert user_home / ".shellrt" / "settings.json" in [p for _s, p in discover_files(ws)]
    assert user_home / ".shellrt" / "settings.json" in candidate_files(ws)
    assert may_name_write_deny(ws)


@pytest.mark.parametrize("home", ["~", "", "rel", "/a/../b/", "//x"])
def test_the_pre_scans_home_is_the_loaders(monkeypatch: pytest.MonkeyPatch, home: str) -> None:
    """The lean path reads the loader's own `caller_home` (it may not import ``shellrt.permissions``)."""
    monkeypatch.setenv("HOME", home)
    assert lean_caller_home() == caller_home_module.caller_home()
