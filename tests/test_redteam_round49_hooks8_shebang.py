"""Red team round 49 (hooks8): a script's ``#!`` line and an ``env`` prefix, read one way.

Round 48 read a hook script's ``#!`` line twice, differently: ``hook_files._first_searched``
dropped ``env``'s options but kept what followed them (``env -S -u PYTHONSAFEPATH python3.11``
became the program ``PYTHONSAFEPATH``; ``env -S -i python3.11`` lost its ``-i``), and
``hook_loads.is_shell_script`` took the word after ``env`` as the program (``env -S bash -e``:
``-S``, no shell, so the script's ``. ./lib.sh`` was never read). A hook line's ``env -C dir``
took ``dir`` for the program. Each case first runs the hook as the runner does (the premise: the
plant runs on the host), then asks whether the record saw the plant. All failed before.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from shellrt.permissions.hook_files import compare_hook_files, hook_files

_MARK = "R49-HOOKS8-PLANT"
_PY = shutil.which("python3.11") or ""  # a Python whose name says 3.11: PYTHONSAFEPATH believed

pytestmark = pytest.mark.skipif(not _PY, reason="needs python3.11 on PATH (a name saying 3.11+)")


def _project(ws: Path) -> None:
    for name in ("http", "lib", ".claude/hooks"):
        (ws / name).mkdir(parents=True)
    (ws / "http" / "get.http").write_text("GET https://example.invalid/\n")
    (ws / "lib.sh").write_text("true\n")
    for name, line in (
        ("clear", "#!/usr/bin/env -S -i python3.11"),
        ("unset", "#!/usr/bin/env -S -u PYTHONSAFEPATH python3.11"),
        ("empty", "#!/usr/bin/env -S PYTHONSAFEPATH= python3.11"),
        ("pypath", "#!/usr/bin/env -S PYTHONPATH=lib python3.11"),
    ):
        (ws / name).write_text(f"{line}\nimport urllib.request\n")
        (ws / name).chmod(0o755)
    hook = ws / ".claude" / "hooks" / "run"
    hook.write_text("#!/usr/bin/env -S bash -e\n. ./lib.sh\n")
    hook.chmod(0o755)


@pytest.mark.parametrize(
    ("hook", "planted"),
    [
        ("./clear", "http/__init__.py"),  # env -i: the runner's PYTHONSAFEPATH gone
        ("./unset", "http/__init__.py"),
        ("./empty", "http/__init__.py"),
        ("./pypath", "lib/urllib/__init__.py"),  # an assignment in the #! line
        ('"$CLAUDE_PROJECT_DIR"/.claude/hooks/run', "lib.sh"),  # a shell by `env -S bash -e`
        (f"env -C lib -u PYTHONSAFEPATH {_PY} -m json.tool < /dev/null", "lib/json/__init__.py"),
        (f"env -S 'PYTHONSAFEPATH= {_PY} -m json.tool' < /dev/null", "json/__init__.py"),
    ],
)
def test_what_a_shebang_or_env_prefix_runs_is_recorded(tmp_path: Path, hook: str, planted: str) -> None:
    ws = tmp_path / "ws"
    _project(ws)
    before = hook_files(ws, [hook])
    target = ws / planted
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(f"print({_MARK!r})\n" if planted.endswith(".py") else f"echo {_MARK}\n")
    done = subprocess.run(
        ["bash", "-c", hook],
        cwd=ws,
        env={"PATH": os.environ["PATH"], "CLAUDE_PROJECT_DIR": str(ws), "PYTHONSAFEPATH": "1"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert _MARK in done.stdout, (hook, done.stdout, done.stderr)  # the premise: the host runs it
    assert compare_hook_files(before, hook_files(ws, [hook])) is not None, (
        f"{planted} not recorded for {hook}"
    )


def test_a_safe_shebang_stays_narrow(tmp_path: Path) -> None:
    """Control: ``env -S python3.11 -P`` and a plain ``env python3.11`` keep the root off
    ``sys.path`` (the runner's PYTHONSAFEPATH holds): the plant does not run, nothing of the tree
    is recorded, and writing it leaves the record as it was."""
    ws = tmp_path / "ws"
    _project(ws)
    for name, line in (("plain", "#!/usr/bin/env python3.11"), ("flag", "#!/usr/bin/env -S python3.11 -P")):
        (ws / name).write_text(f"{line}\nimport urllib.request\n")
        (ws / name).chmod(0o755)
    (ws / "http" / "__init__.py").write_text(f"print({_MARK!r})\n")
    for hook in ("./plain", "./flag"):
        done = subprocess.run(
            [str(ws / hook)],
            cwd=ws,
            env={"PATH": os.environ["PATH"], "PYTHONSAFEPATH": "1"},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert _MARK not in done.stdout and done.returncode == 0, (hook, done.stdout, done.stderr)
    (ws / "http" / "__init__.py").unlink()
    for hook in ("./plain", "./flag"):
        record = hook_files(ws, [hook])
        assert "." not in {*record.files, *record.dirs}, (hook, record)
        (ws / "http" / "__init__.py").write_text("x = 1\n")
        assert compare_hook_files(record, hook_files(ws, [hook])) is None, hook
        (ws / "http" / "__init__.py").unlink()
