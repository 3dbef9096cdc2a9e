"""Red team round 40 (trust3): modules other interpreters load from a workspace by the operator's
``PERL5LIB``, ``RUBYLIB``, ``LUA_PATH``/``LUA_CPATH``, ``LUA_INIT`` and ``CLASSPATH``.

Each comes before the interpreter's own libraries, as ``PYTHONPATH`` does (round 39): with a
dotfiles or tools repository's ``lib/`` on one, a command's ``strict.pm`` there runs in every perl
the operator starts (git's own perl scripts, ``git send-email``, ``cloc``...), ``rubygems.rb`` in
every ruby, ``socket.lua`` in every lua that requires it, ``LUA_INIT=@file`` at every lua start, a
``META-INF/services`` entry in every ``javac`` (annotation processors) of that ``CLASSPATH``.
Round 39 guarded none of them (its Left). A new module name stays the project's own.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from shellrt.supervisor.protect import protected_reason
from tests._plants import assert_tools_ask
from tests._round39_trust2 import plant_and_check, workspace

PLANTS = [
    "dot/perl/strict.pm",
    "dot/perl/File/Temp.pm",
    "dot/ruby/rubygems.rb",
    "dot/ruby/rake.rb",  # a gem's name (the home's ~/.gem lists it)
    "dot/lua/socket.lua",  # a rock's name (the home's ~/.luarocks lists it)
    "dot/lua/socket/init.lua",
    "dot/init.lua",  # LUA_INIT=@…
    "java/classes/META-INF/services/javax.annotation.processing.Processor",
    "java/lib/r40.jar",  # CLASSPATH …/lib/*
    "java/tool.jar",  # CLASSPATH names it
]
#: New module names (the project's own, loaded by choosing them), and files elsewhere.
KEPT = [
    "dot/perl/R40Own.pm",
    "dot/perl/strict.txt",  # no module file (perl loads strict.pm)
    "dot/ruby/r40own.rb",
    "dot/lua/r40own.lua",
    "java/classes/com/example/Own.class",
    "src/strict.pm",
]


def _operator(ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    for rel in (".gem/ruby/3.1.0/gems/rake-13.0/lib/rake.rb", ".luarocks/share/lua/5.4/socket.lua"):
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text("-- the operator's\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("SHELLRT_TRUST_STORE", raising=False)
    monkeypatch.setenv("PERL5LIB", str(ws / "dot" / "perl"))
    monkeypatch.setenv("RUBYLIB", str(ws / "dot" / "ruby"))
    monkeypatch.setenv("LUA_PATH", f"{ws}/dot/lua/?.lua;{ws}/dot/lua/?/init.lua;;")
    monkeypatch.setenv("LUA_INIT", f"@{ws}/dot/init.lua")
    monkeypatch.setenv("CLASSPATH", f"{ws}/java/classes:{ws}/java/lib/*:{ws}/java/tool.jar")


@pytest.mark.parametrize("backend", ["local", "bwrap"])
def test_other_interpreters_module_paths_are_guarded(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = workspace(backend, tmp_path, "dot/perl")
    _operator(ws, tmp_path, monkeypatch)
    plant_and_check(ws, tmp_path / "s", PLANTS, KEPT, "# r40\n", backend=backend)
    assert_tools_ask(ws, PLANTS)
    assert not [rel for rel in KEPT if protected_reason(ws / rel)]


def test_perl_loads_a_strict_pm_from_perl5lib_first(tmp_path: Path) -> None:
    """The premise: a ``strict.pm`` in a ``PERL5LIB`` directory is what every perl script's ``use
    strict`` runs."""
    perl = shutil.which("perl")
    assert perl is not None, "perl is not installed (apt-get install perl)"
    (tmp_path / "strict.pm").write_text('print "planted\\n"; sub import {} 1;\n')
    env = {**os.environ, "PERL5LIB": str(tmp_path)}
    out = subprocess.run([perl, "-e", "use strict; 1"], env=env, capture_output=True, text=True, check=True)
    assert out.stdout == "planted\n"
