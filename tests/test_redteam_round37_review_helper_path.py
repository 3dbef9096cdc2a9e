"""Round 37 red team, review: the scheduling helpers come from the system's path, never a planted one.

`calm_argv` (every host process a tool starts) and `calm_prefix` (commands, hooks) put ``nice``,
``chrt``, ``ionice`` and ``prlimit`` before a start when the caller runs raised. A command
writes the workspace, and a caller's ``PATH`` often names a directory in it (an activated
``.venv/bin``, direnv's ``bin``, ``./node_modules/.bin``); shellrt's own cwd is often the
workspace. Each helper planted there (and as the child's own ``PATH``) recorded that it ran.
Held (a guard, passed before): the helpers are looked up on ``/bin:/usr/bin:/usr/sbin:/sbin``
only, and are started by absolute path.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.conftest import require

_HELPERS = ("nice", "chrt", "ionice", "prlimit", "choom")

_CHILD = textwrap.dedent(
    """
    import os, subprocess, sys
    from shellrt.tools._hostchild import calm_argv
    from sandbox._bwrap_sched import calm_prefix
    from sandbox._oomscore import oom_prefix
    planted = sys.argv[1]
    argv = calm_argv(["true"], planted + ":" + os.defpath)
    print("ARGV", argv)
    assert all(not part.startswith(planted) for part in argv), argv
    assert argv[0].startswith(("/usr/", "/bin/", "/sbin/")), argv
    subprocess.run(argv, env={"PATH": planted + ":" + os.defpath}, cwd=planted, check=True)
    for prefix in (calm_prefix(limits=True), oom_prefix()):
        assert all(not part.startswith(planted) for part in prefix), prefix
    print("NICE", os.getpriority(os.PRIO_PROCESS, 0))
    """
)


def test_planted_helpers_on_path_and_in_cwd_are_never_run(tmp_path: Path) -> None:
    require(os.geteuid() == 0, "a caller at nice -5 needs root")
    planted = tmp_path / "venv-bin"
    planted.mkdir()
    marker = tmp_path / "ran"
    for name in _HELPERS:
        helper = planted / name
        helper.write_text(f"#!/bin/sh\necho {name} >> {marker}\nexit 0\n")
        helper.chmod(0o755)
    script = tmp_path / "child.py"
    script.write_text(_CHILD)
    root = Path(__file__).parent.parent
    done = subprocess.run(
        [sys.executable, "-c", "import os, sys; os.nice(-5); os.execv(sys.argv[1], sys.argv[1:])",
         sys.executable, str(script), str(planted)],
        capture_output=True, text=True, timeout=60, cwd=planted,
        env={**os.environ, "PATH": f"{planted}:{os.environ.get('PATH', os.defpath)}", "PYTHONPATH": str(root)},
    )
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    assert "NICE -5" in done.stdout and "nice" in done.stdout.split("ARGV", 1)[1], done.stdout
    assert not marker.exists(), marker.read_text()
