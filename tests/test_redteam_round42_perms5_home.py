"""Red team round 42 (perms5): with HOME empty, relative or ``~``, a ``~/`` rule denied one place and masked another.

The permission layer took ``$HOME`` as given (``HOME=`` meant ``/``, ``HOME=rel`` a directory below
the current one, ``HOME=~`` a directory called ``~`` there), the sandbox compile the password
database's home. ``Read(~/tok)`` then denied ``/tok`` (or ``./rel/tok``) to the file tools and masked
``<home>/tok`` from commands: each side left the other's file open. And the protected-files check
watched ``$HOME/.shellrt/settings.json`` as given while sessions read the user settings elsewhere.
Now `shellrt.permissions.caller_home.caller_home` is the one home of both.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox import SandboxPolicy
from shellrt.permissions.ruleset import RuleSet
from shellrt.permissions.sources import discover_files, load_settings
from shellrt.permissions.trust_paths import later_session_files
from shellrt.runtime.sandbox_policy import derive_policy

HOMES = ["", "rel", "~", "./"]


@pytest.fixture
def ws(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="rt42-perms5-home-"))
    monkeypatch.chdir(base)
    monkeypatch.setenv("SHELLRT_TRUST_STORE", str(base / "store.json"))
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _password_home() -> Path:
    import pwd

    return Path(os.path.normpath(pwd.getpwuid(os.getuid()).pw_dir))


@pytest.mark.parametrize("home", HOMES)
def test_a_home_rule_denies_what_it_masks(ws: Path, monkeypatch: pytest.MonkeyPatch, home: str) -> None:
    monkeypatch.setenv("HOME", home)
    settings = load_settings(ws, deny=["Read(~/tok)"], managed_path=ws / "no-managed.json")
    rules = settings.rules.rules
    policy, _ = derive_policy(SandboxPolicy(workspace=ws), rules=rules, mask_defaults=False)
    masked = set(policy.read_denied)
    target = _password_home() / "tok"
    assert target in masked, masked
    assert rules[0].match_item(str(target), home=settings.rules.home, resolve=False)
    for elsewhere in (Path("/tok"), ws / "rel" / "tok", ws / "~" / "tok", ws / "tok"):
        assert not rules[0].match_item(str(elsewhere), home=settings.rules.home, resolve=False), elsewhere


@pytest.mark.parametrize("home", HOMES)
def test_the_user_settings_read_are_the_ones_watched(ws: Path, monkeypatch: pytest.MonkeyPatch, home: str) -> None:
    monkeypatch.setenv("HOME", home)
    user = [p for source, p in discover_files(ws, managed_path=ws / "no.json") if source == "user"]
    watched = {os.path.abspath(p) for p in later_session_files()}
    assert user and os.path.abspath(user[0]) in watched, (user, watched)
    assert user[0].is_absolute(), user


def test_a_home_of_tilde_does_not_raise(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "~")
    assert RuleSet().home.is_absolute()
