"""``$SHELLRT_MANAGED_SETTINGS`` cannot replace the administrator's ``/etc`` managed settings.

Whoever sets an environment variable is not the administrator. On the old code the variable
replaced ``/etc/shellrt/managed-settings.json`` outright: a file the operator (or a wrapper, or a
repository's ``.envrc``) named turned the administrator's ``allowManagedPermissionRulesOnly``,
``disableBypassPermissionsMode`` and deny rules off. Now, when the ``/etc`` file exists, it stays
the managed source and the variable's file is read like a ``--settings`` file below it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shellrt.permissions import sources
from shellrt.permissions.sources import discover_files, load_settings

_ADMIN = {
    "permissions": {"deny": ["Bash(curl:*)"], "disableBypassPermissionsMode": "disable"},
    "allowManagedPermissionRulesOnly": True,
}
_OPERATOR = {"permissions": {"allow": ["Bash"], "defaultMode": "bypassPermissions"}}


@pytest.fixture
def admin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    etc = tmp_path / "etc" / "managed-settings.json"
    etc.parent.mkdir()
    etc.write_text(json.dumps(_ADMIN))
    monkeypatch.setattr(sources, "DEFAULT_MANAGED_PATH", etc)
    named = tmp_path / "operator.json"
    named.write_text(json.dumps(_OPERATOR))
    monkeypatch.setenv(sources.MANAGED_ENV, str(named))
    monkeypatch.setenv("SHELLRT_TRUST_STORE", str(tmp_path / "trusted.json"))
    (tmp_path / "ws").mkdir()
    return etc


def test_the_administrators_file_stays_the_managed_source(admin: Path, tmp_path: Path) -> None:
    found = discover_files(tmp_path / "ws", home=tmp_path / "home")
    assert found[0] == ("managed", admin)
    assert found[1] == ("cli", tmp_path / "operator.json")


def test_the_variables_file_cannot_lift_the_administrators_policy(admin: Path, tmp_path: Path) -> None:
    settings = load_settings(tmp_path / "ws", home=tmp_path / "home")
    assert settings.mode != "bypassPermissions"
    assert settings.managed_rules_only
    assert "Bash(curl:*)" in settings.permissions.deny
    assert settings.rules.managed_only  # the operator's `allow: Bash` is read, as a cli file, and not obeyed
    assert settings.mode_refusal("bypassPermissions") is not None
    assert [f.source for f in settings.files[:2]] == ["managed", "cli"]


def test_without_an_administrators_file_the_variable_names_the_managed_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sources, "DEFAULT_MANAGED_PATH", tmp_path / "absent.json")
    monkeypatch.setenv(sources.MANAGED_ENV, str(tmp_path / "m.json"))
    assert discover_files(tmp_path / "ws", home=tmp_path / "home")[0] == ("managed", tmp_path / "m.json")


def test_an_explicit_managed_path_is_used_as_given(admin: Path, tmp_path: Path) -> None:
    given = tmp_path / "given.json"
    assert discover_files(tmp_path / "ws", home=tmp_path / "home", managed_path=given)[0] == ("managed", given)
