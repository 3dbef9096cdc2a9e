"""Red team round 39 (review12): module names the operator's *other* Pythons find past PYTHONPATH.

Trust2 guarded a file of a workspace ``PYTHONPATH`` directory when its top-level module is one
shellrt's own interpreter finds later (its standard library, its ``sys.path``). The operator's
``PYTHONPATH`` reaches every Python they start: a newer one (3.13 imports ``_colorize`` in every
traceback and ``_pyrepl`` at its prompt; 3.14 adds ``annotationlib``), the system's ``/usr/bin/python3``
with its ``dist-packages`` (``apt``, ``gi``, ``dbus``: Debian's command-not-found handler is Python).
Each was kept: a new name, "the project's own".
"""

from __future__ import annotations

import glob
import os
from pathlib import Path

import pytest

from shellrt.supervisor.protect import protected_reason
from tests._plants import assert_tools_ask
from tests._round39_trust2 import plant_and_check, workspace

NEWER = ["py/_colorize.py", "py/_pyrepl/__init__.py", "py/annotationlib.py", "py/compression/__init__.py"]
KEPT = ["py/r39_project_module.py", "py/r39pkg/__init__.py", "src/main.py"]


def _other_site_name() -> str:
    """A top-level name only another interpreter's site directory holds (not shellrt's ``sys.path``)."""
    import sys

    mine = {n.split(".")[0] for e in sys.path if os.path.isdir(e) for n in os.listdir(e)}
    for place in sorted(glob.glob("/usr/lib/python3/dist-packages")) + sorted(glob.glob("/usr/lib/python3*")):
        for name in sorted(os.listdir(place)) if os.path.isdir(place) else ():
            top = name.split(".")[0].split("-")[0]
            if (
                top.isidentifier()
                and not top.startswith("_")
                and top not in mine
                and top not in sys.stdlib_module_names
            ):
                return top
    return ""


@pytest.mark.parametrize("backend", ["local", "bwrap"])
def test_names_other_pythons_find_are_guarded(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = workspace(backend, tmp_path, "py")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("SHELLRT_TRUST_STORE", raising=False)
    monkeypatch.setenv("PYTHONPATH", str(ws / "py"))
    other = _other_site_name()
    plants = NEWER + ([f"py/{other}.py"] if other else [])
    unguarded = [rel for rel in plants if not protected_reason(ws / rel)]
    assert not unguarded, f"not guarded: {unguarded}"
    plant_and_check(ws, tmp_path / "s", plants, KEPT, "import os\n# r39\n", backend=backend)
    assert_tools_ask(ws, plants)
    assert not [rel for rel in KEPT if protected_reason(ws / rel)]
