"""Red team round 33 (settings): an administrator's restriction written with another value.

The managed file's ``"disableBypassPermissionsMode": true`` (the documented value is
``"disable"``) or ``"allowManagedPermissionRulesOnly": "true"`` (a string) was read as off,
silently: ``--mode bypassPermissions`` (or a model's switch to it) and the user's and the
repository's allow rules applied as if there were no policy. Both only narrow, so a value other
than the "on" one and the plain "off" ones (``false``, ``null``) is now taken as on, and said.
"""

from __future__ import annotations

import json
from pathlib import Path

from shellrt.permissions.sources import load_settings


def test_managed_restrictions_with_other_values_are_taken_as_on(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    home = tmp_path / "home"
    (home / ".shellrt").mkdir(parents=True)
    (home / ".shellrt" / "settings.json").write_text(json.dumps({"permissions": {"allow": ["Bash"]}}))
    managed = tmp_path / "managed.json"
    lost = []
    for value in (True, "Disable", 1):
        managed.write_text(json.dumps({"disableBypassPermissionsMode": value}))
        settings = load_settings(ws, home=home, managed_path=managed, mode="bypassPermissions")
        if settings.mode == "bypassPermissions":
            lost.append(f"disableBypassPermissionsMode: {value!r}")
    for value in ("true", 1, "yes"):
        managed.write_text(json.dumps({"allowManagedPermissionRulesOnly": value}))
        settings = load_settings(ws, home=home, managed_path=managed)
        if not any(settings.rules.ignored(r) for r in settings.rules.rules if r.kind == "allow"):
            lost.append(f"allowManagedPermissionRulesOnly: {value!r}")
        assert any("allowManagedPermissionRulesOnly is" in d for d in settings.diagnostics) or lost
    assert not lost, f"restrictions read as off: {lost}"
    for off in ({"disableBypassPermissionsMode": False}, {"allowManagedPermissionRulesOnly": False}, {}):
        managed.write_text(json.dumps(off))
        settings = load_settings(ws, home=home, managed_path=managed, mode="bypassPermissions")
        assert settings.mode == "bypassPermissions" and not settings.rules.managed_only, off
        assert not [d for d in settings.diagnostics if "taken as" in d], settings.diagnostics
