"""Red team round 42 (perms5): the operator's own ``disableBypassPermissionsMode`` was silently ignored.

``"disableBypassPermissionsMode": "disable"`` (top level or under ``permissions``) was obeyed only in
the managed file. Written in the operator's user settings or a ``--settings`` file -- the
places an operator without an administrator has -- it was parsed, accepted without a word, and
``--mode bypassPermissions`` (or a later switch to it) ran every call unasked. It only narrows, so
it is now obeyed from every source (an untrusted repository's too, as its deny rules are), and the
refusal names where it came from.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from shellrt.permissions.sources import load_settings


@pytest.fixture
def places(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Path]]:
    base = Path(tempfile.mkdtemp(prefix="rt42-perms5-nobypass-"))
    (base / "ws" / ".shellrt").mkdir(parents=True)
    (base / "home" / ".shellrt").mkdir(parents=True)
    monkeypatch.setenv("SHELLRT_TRUST_STORE", str(base / "store.json"))
    try:
        yield base / "ws", base / "home"
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("where", ["user", "cli", "project"])
@pytest.mark.parametrize("nested", [False, True])
def test_a_disabled_bypass_is_obeyed_from_any_source(places: tuple[Path, Path], where: str, nested: bool) -> None:
    ws, home = places
    body = {"permissions": {"disableBypassPermissionsMode": "disable"}} if nested else {"disableBypassPermissionsMode": "disable"}
    file = {"user": home / ".shellrt" / "settings.json", "cli": home / "extra.json", "project": ws / ".shellrt" / "settings.json"}[where]
    file.write_text(json.dumps(body))
    settings = load_settings(
        ws,
        mode="bypassPermissions",
        home=home,
        managed_path=home / "no-managed.json",
        settings_files=[file] if where == "cli" else (),
    )
    assert settings.mode != "bypassPermissions", settings.diagnostics
    assert settings.mode_refusal("bypassPermissions") is not None
    assert any("bypassPermissions" in d and str(file) in d for d in settings.diagnostics), settings.diagnostics


def test_without_it_bypass_is_chosen(places: tuple[Path, Path]) -> None:
    ws, home = places
    settings = load_settings(ws, mode="bypassPermissions", home=home, managed_path=home / "no-managed.json")
    assert settings.mode == "bypassPermissions"
