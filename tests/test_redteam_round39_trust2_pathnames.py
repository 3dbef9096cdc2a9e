"""Red team round 39 (trust2): a new name in a directory on the operator's PATH.

Round 38 guarded a file of a workspace ``PATH`` directory only when it shadows a program another
``PATH`` directory holds; a new name stayed "the project's own, run by choosing it". But the operator
runs new names without choosing them: a typo (``sl``, ``gti``), a program not installed yet
(``python`` where only ``python3`` is), ``git comit`` (git runs ``git-comit`` from PATH before it
says "not a git command"), a credential helper the operator's git or docker config names that this
host lacks (``git-credential-osxkeychain``, ``docker-credential-desktop``). In a tools or dotfiles
repository's ``bin/`` on PATH each ran in the operator's next shell, outside the project. Only the
project's own PATH (the activated ``$VIRTUAL_ENV``/``$CONDA_PREFIX``, what direnv loaded for
``$DIRENV_DIR``) keeps new names: ``pip install``'s entry points.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from shellrt.supervisor.protect import protected_reason
from tests._plants import assert_tools_ask
from tests._round39_trust2 import plant_and_check
from tests.conftest import require

PLANTS = [
    "tools/bin/sl",
    "tools/bin/gti",
    "tools/bin/git-comit",
    "tools/bin/git-credential-osxkeychain",
    "tools/bin/docker-credential-desktop",
    "tools/bin/r39-not-installed-yet",
]
#: The activated venv's new entry point, a file direnv's project PATH holds, a file below a PATH
#: directory (the shell looks in no subdirectory), files no program runs.
KEPT = [".venv/bin/r39-entry-point", "proj/bin/r39-script", "tools/bin/lib/helper.sh", "src/main.py", "README.md"]


def _isolate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    tmp_path.chmod(0o755)
    ws = tmp_path / "ws"
    for rel in ("tools/bin", ".venv/bin", "proj/bin"):
        (ws / rel).mkdir(parents=True)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("SHELLRT_TRUST_STORE", raising=False)
    monkeypatch.delenv("CONDA_PREFIX", raising=False)
    monkeypatch.setenv("VIRTUAL_ENV", str(ws / ".venv"))
    monkeypatch.setenv("DIRENV_DIR", f"-{ws / 'proj'}")
    paths = [ws / ".venv/bin", ws / "proj/bin", ws / "tools/bin"]
    monkeypatch.setenv("PATH", ":".join([*map(str, paths), os.environ["PATH"]]))
    return ws


@pytest.mark.parametrize("backend", ["local", "bwrap"])
def test_a_new_name_in_a_path_directory_is_guarded(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if backend == "bwrap":
        require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    ws = _isolate(tmp_path, monkeypatch)
    plant_and_check(ws, tmp_path / "s", PLANTS, KEPT, "#!/bin/sh\n# r39\n", backend=backend)
    assert_tools_ask(ws, PLANTS)
    assert not [rel for rel in KEPT if protected_reason(ws / rel)]


def test_the_projects_own_path_still_guards_a_shadowing_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Round 38's rule holds in the activated venv's and direnv's directories: ``git`` there is not
    the project's."""
    ws = _isolate(tmp_path, monkeypatch)
    plant_and_check(ws, tmp_path / "s", [".venv/bin/git", "proj/bin/ls"], [".venv/bin/r39-x"], "#!/bin/sh\n")
    assert_tools_ask(ws, [".venv/bin/git", "proj/bin/ls"])
