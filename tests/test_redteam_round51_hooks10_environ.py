"""Red team round 51 (hooks10): a Python hook script drops ``PYTHONSAFEPATH`` by a spelling round 50 missed.

Round 50 read a Python hook script as dropping the runner's ``PYTHONSAFEPATH`` for its children
when it named it as a string, assigned ``os.environ`` or called ``os.environ.clear``/
``os.unsetenv``. ``os.environb.pop(b"…")``, an aliased ``o.environ.clear()``, a key built at run
time and ``ctypes``' ``unsetenv`` each dropped it unread: the child ``python3.11 -m json.tool``
imported the workspace's ``json/__init__.py`` on the host, unrecorded (4 of 4 failed before).
Now every use of the environment must be a known read (`hook_environ.changes_environ`).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from shellrt.permissions.hook_files import compare_hook_files, hook_files
from tests._hook_runs import run_hook_line

_MARK = "R51-HOOKS10-ENVIRON"
_PY = shutil.which("python3.11") or ""  # a name saying 3.11: the runner's PYTHONSAFEPATH believed

pytestmark = pytest.mark.skipif(not _PY, reason="needs python3.11 on PATH (a name saying 3.11+)")

_CHILD = f'subprocess.run([{_PY!r}, "-m", "json.tool", "data.json"], check=True)\n'
_DROPS = {
    "environb": 'import os, subprocess\nos.environb.pop(b"PYTHONSAFEPATH", None)\n',
    "alias": "import os as o, subprocess\no.environ.clear()\n",
    "computed": 'import os, subprocess\nos.environ.pop("PYTHON" + "SAFEPATH", None)\n',
    "ctypes": 'import ctypes, subprocess\nctypes.CDLL(None).unsetenv(b"PYTHONSAFEPATH")\n',
}
#: Reads (and literal keys set) that keep it: the control.
_KEEPS = (
    "import os, subprocess\n"
    'here = os.environ.get("CLAUDE_PROJECT_DIR", ".") + os.environ["PATH"]\n'
    'os.environ["HOOK_SEEN"] = "1"\n'
    'os.environ.setdefault("LANG", "C")\n'
    'extra = {**os.environ, "A": "1"} if "HOME" in os.environ else dict(os.environ)\n'
)


def _project(ws: Path, name: str, text: str) -> str:
    (ws / "json").mkdir(parents=True)  # a data directory the project already has
    (ws / "json" / "fixture.json").write_text("{}\n")
    (ws / "data.json").write_text("{}\n")
    (ws / ".claude" / "hooks").mkdir(parents=True)
    (ws / ".claude" / "hooks" / f"{name}.py").write_text(text + _CHILD)
    return f'{_PY} -I "$CLAUDE_PROJECT_DIR"/.claude/hooks/{name}.py'



@pytest.mark.parametrize("name", sorted(_DROPS))
def test_a_dropped_safe_path_in_a_python_hook_script_is_read(tmp_path: Path, name: str) -> None:
    ws = tmp_path / "ws"
    hook = _project(ws, name, _DROPS[name])
    before = hook_files(ws, [hook])
    (ws / "json" / "__init__.py").write_text(f"print({_MARK!r})\n")
    done = run_hook_line(ws, hook)
    assert _MARK in done.stdout, (name, done.stdout, done.stderr)  # the premise: the host runs it
    assert compare_hook_files(before, hook_files(ws, [hook])) is not None, f"json/__init__.py unrecorded: {name}"


def test_a_script_that_only_reads_its_environment_stays_narrow(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    hook = _project(ws, "keeps", _KEEPS)
    record = hook_files(ws, [hook])
    assert "." not in record.files, record
    (ws / "json" / "__init__.py").write_text(f"print({_MARK!r})\n")
    done = run_hook_line(ws, hook)
    assert done.returncode == 0 and _MARK not in done.stdout, (done.stdout, done.stderr)
    assert compare_hook_files(record, hook_files(ws, [hook])) is None
