"""Red team, round 48 (perms8): a trusted repository's ``additionalDirectories`` naming a system directory.

``permissions.additionalDirectories`` become roots the file tools may write and writable roots of
the sandbox (a root caller's are idmapped to the sandbox uid: its commands own them there). A
trusted repository's ``.shellrt/settings.json`` could name ``/etc`` (round 47's Left: only ``/``
and the system temp places were refused, when the backend is made): every command the agent runs
-- not only the repository's author, whom the operator trusted -- could then rewrite the host's
``/etc``, and the Write tool (as the caller) too. Decided: a workspace's own settings file may not
name a directory that is, holds or lies inside a system directory, nor one that is or holds the
homes (``/root``, ``/home``, the caller's own); the entry is dropped with a diagnostic saying what
to do (the operator's own settings, ``--settings`` or the user file, may). Real paths are compared:
a link elsewhere on the host naming ``/etc`` is ``/etc``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from shellrt.permissions.sources import load_settings


def test_a_trusted_repository_cannot_add_a_system_directory(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ws = home / "ws"
    sibling = home / "other-project"
    (ws / ".shellrt").mkdir(parents=True)
    sibling.mkdir()
    link = tmp_path / "to-etc"
    link.symlink_to("/etc")
    system = ["/etc", "/usr/lib", "/var/lib", "/", "/root", "/home", str(home), str(link), "/etc/../etc/ssh"]
    (ws / ".shellrt" / "settings.json").write_text(
        json.dumps({"permissions": {"additionalDirectories": [*system, str(sibling)]}})
    )
    settings = load_settings(ws, home=home, trust_workspace=True)
    real = {os.path.realpath(d) for d in settings.additional_directories}
    kept = sorted(real & {os.path.realpath(d) for d in system})
    assert not kept, f"a repository made system directories writable roots: {kept}"
    assert os.path.realpath(sibling) in real, settings.additional_directories  # a project beside it stays
    assert any("/etc" in d and "system directory" in d for d in settings.diagnostics), settings.diagnostics


def test_the_operators_own_settings_may_still_name_one(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ws = home / "ws"
    ws.mkdir(parents=True)
    given = tmp_path / "operator.json"
    given.write_text(json.dumps({"permissions": {"additionalDirectories": ["/var/lib"]}}))
    settings = load_settings(ws, home=home, settings_files=[given])
    assert Path("/var/lib") in settings.additional_directories, settings.diagnostics
