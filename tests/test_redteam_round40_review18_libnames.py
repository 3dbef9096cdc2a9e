"""Red team round 40 (review18): module files trust3's library-name guard named otherwise.

- A ``LUA_PATH`` template not of the form ``dir/?.lua``: ``dir/mod_?.lua`` loads ``mod_socket.lua`` for
  ``require "socket"``, ``dir/?.luac`` loads ``socket.luac``; trust3 took the stem (``mod_socket``) or
  skipped the ending (``.luac`` is no module ending), so both ran unguarded in the operator's lua.
- A ``NODE_PATH`` directory (trust3's Left): node looks there when ``node_modules`` lacks a name,
  and packages require optional dependencies in a ``try`` (``debug`` -> ``supports-color``, ``ws`` ->
  ``bufferutil``): a command's ``supports-color/index.js`` there ran in the operator's node tools.
- A ``CLASSPATH`` jar's manifest ``Class-Path: extra.jar deps/``: the JVM puts ``extra.jar`` and
  ``deps/`` on the class path after it, so a command's ``extra.jar`` (its ``META-INF/services``
  annotation processor) ran in every ``javac`` of that class path.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from shellrt.supervisor.protect import protected_reason
from tests._plants import assert_tools_ask
from tests._round39_trust2 import plant_and_check, workspace

PLANTS = [
    "dot/lua/mod_socket.lua",
    "dot/luac/socket.luac",
    "java/extra.jar",
    "java/deps/META-INF/services/javax.annotation.processing.Processor",
    "java/lib/more.jar",  # named by the manifest of a jar of a ``dir/*`` entry
    "node/supports-color/index.js",
]
KEPT = ["dot/README.md", "java/notes.txt", "src/socket.lua"]


def _operator(ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    (home / ".luarocks/share/lua/5.4").mkdir(parents=True)
    (home / ".luarocks/share/lua/5.4/socket.lua").write_text("-- the operator's\n")
    (ws / "java" / "all").mkdir(parents=True)
    for jar, class_path in (("tool.jar", "extra.jar deps/"), ("all/a.jar", "../lib/more.jar")):
        with zipfile.ZipFile(ws / "java" / jar, "w") as archive:
            archive.writestr("META-INF/MANIFEST.MF", f"Manifest-Version: 1.0\nClass-Path: {class_path}\n\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("SHELLRT_TRUST_STORE", raising=False)
    monkeypatch.setenv("LUA_PATH", f"{ws}/dot/lua/mod_?.lua;{ws}/dot/luac/?.luac;;")
    monkeypatch.setenv("CLASSPATH", f"{ws}/java/tool.jar:{ws}/java/all/*")
    monkeypatch.setenv("NODE_PATH", f"{ws}/node")


@pytest.mark.parametrize("backend", ["local", "bwrap"])
def test_module_files_named_by_a_template_or_a_manifest_are_guarded(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = workspace(backend, tmp_path, "dot/lua")
    (ws / "dot" / "luac").mkdir()
    (ws / "node").mkdir()
    _operator(ws, tmp_path, monkeypatch)
    plant_and_check(ws, tmp_path / "s", PLANTS, KEPT, "-- r40\n", backend=backend)
    assert_tools_ask(ws, PLANTS)
    assert not [rel for rel in KEPT if protected_reason(ws / rel)]
