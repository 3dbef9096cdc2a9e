"""Red team round 39 (trust2): code the operator's interpreters import from a workspace.

``PYTHONPATH`` comes before the standard library and site-packages on every ``sys.path``: with a
dotfiles or tools repository's ``python/`` on the operator's ``PYTHONPATH``, a command's ``json.py``,
``subprocess/__init__.py``, ``anyio/__init__.py`` (an installed package's name) or
``sitecustomize.py`` there runs in every Python the operator starts -- shellrt's next start
included. ``GEM_HOME`` (and a home's ``~/.gem``) holds the gems every later ``require`` activates,
the highest version first; ``~/perl5`` is local::lib's (``cpanm``'s modules, on ``PERL5LIB``). Round 38
guarded none of them: each plant was kept, and the file tools did not ask.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.supervisor.protect import protected_reason
from tests._plants import assert_tools_ask
from tests._round39_trust2 import plant_and_check, workspace

PLANTS = [
    "dot/python/json.py",
    "dot/python/sitecustomize.py",
    "dot/python/subprocess/__init__.py",
    "dot/python/anyio/__init__.py",  # a package shellrt's interpreter has installed
    "dot/python/socket.cpython-311-x86_64-linux-gnu.so",
    "gems/gems/json-99.0/lib/json.rb",
    "gems/specifications/json-99.0.gemspec",
]
#: A new module or package name (the project's own, imported by choosing it), files elsewhere.
KEPT = ["dot/python/r39_own.py", "dot/python/r39pkg/__init__.py", "dot/README.md", "src/json.py"]


@pytest.mark.parametrize("backend", ["local", "bwrap"])
def test_module_paths_of_the_operator_are_guarded(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = workspace(backend, tmp_path, "dot/python")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("SHELLRT_TRUST_STORE", raising=False)
    monkeypatch.setenv("PYTHONPATH", str(ws / "dot" / "python"))
    monkeypatch.setenv("GEM_HOME", str(ws / "gems"))
    plant_and_check(ws, tmp_path / "s", PLANTS, KEPT, "# r39\n", backend=backend)
    assert_tools_ask(ws, PLANTS)
    assert not [rel for rel in KEPT if protected_reason(ws / rel)]


def test_a_home_workspaces_gems_and_perl_modules_are_guarded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tmp_path.chmod(0o755)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("SHELLRT_TRUST_STORE", raising=False)
    for name in ("GEM_HOME", "GEM_PATH", "PERL_LOCAL_LIB_ROOT", "PYTHONPATH"):
        monkeypatch.delenv(name, raising=False)
    plants = [".gem/ruby/3.1.0/gems/rake-99/lib/rake.rb", "perl5/lib/perl5/strict.pm"]
    plant_and_check(home, tmp_path / "s", plants, ["src/main.rb"], "# r39\n")
    assert_tools_ask(home, plants)
