"""Review of round 35 (hostenv): a ``..`` after a workspace directory is the workspace's to move.

``hook_env`` keeps an absolute path whose ``normpath`` and ``realpath`` are outside every writable
root. For ``<ws>/tools/../../shared/env.sh`` both are ``<parent>/shared/env.sh`` while ``tools`` is
a plain directory or missing, but the kernel resolves ``tools`` first: once a command makes it a
link to ``a/b`` (after the judgement, which `hook_env` also caches for 2 s: a PostToolUse hook of
the same call), the hook's bash read ``<ws>/shared/env.sh``, a workspace file. A ``..`` whose
prefix is inside a writable root is judged as that root's now.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from shellrt.permissions.hook_env import hook_env


def test_a_dotdot_after_a_workspace_directory_is_not_kept(tmp_path: Path) -> None:
    ws, shared = tmp_path / "ws", tmp_path / "shared"
    (ws / "tools").mkdir(parents=True)
    shared.mkdir()
    (shared / "env.sh").write_text("true\n")  # the operator's own file
    planted = tmp_path / "PLANTED"
    via = f"{ws}/tools/../../shared"
    environ = {
        "PATH": f"{via}:/usr/bin:/bin",
        "BASH_ENV": f"{via}/env.sh",
        "PYTHONPATH": via,
        "SOME_TOOL_RC": f"{via}/rc",
    }
    env = hook_env(environ, [ws])  # judged: everything names <tmp>/shared
    # The command, after the judgement: tools becomes a link two levels down, the files appear.
    (ws / "a" / "b").mkdir(parents=True)
    (ws / "shared").mkdir()
    (ws / "shared" / "env.sh").write_text(f"echo bash_env >> {planted}\n")
    tool = ws / "shared" / "tool"
    tool.write_text(f"#!/bin/sh\necho path >> {planted}\n")
    tool.chmod(0o755)
    os.rmdir(ws / "tools")
    os.symlink("a/b", ws / "tools")
    subprocess.run(["/bin/bash", "-c", "tool; true"], cwd=ws, env=env, check=True, capture_output=True)
    ran = planted.read_text() if planted.exists() else ""
    kept = {name: env[name] for name in environ if name != "PATH" and name in env}
    assert env["PATH"] == "/usr/bin:/bin" and not kept and not ran, (
        f"kept {kept}, PATH {env['PATH']}; the hook ran workspace code: {ran!r}"
    )
