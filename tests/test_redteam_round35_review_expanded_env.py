"""Review of round 35 (hostenv): ``BASH_ENV`` and ``ENV`` are expanded by the shell before use.

bash subjects ``BASH_ENV`` to parameter expansion, command substitution and arithmetic expansion
before reading the file (``ENV`` likewise for an interactive or POSIX-mode shell). The value rule
splits at parentheses and blanks: ``/$(sh x.sh)`` became ``/$``, ``sh``, ``x.sh``, an absolute path
and two words, and was kept; a hook's bash, started in the workspace, ran the command's ``x.sh``.
Now a ``$`` or a backquote in either drops it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from shellrt.permissions.hook_env import hook_env


def test_an_expanded_start_up_file_is_not_kept(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    planted = tmp_path / "PLANTED"
    (ws / "x.sh").write_text(f"echo ran >> {planted}\n")  # what a sandboxed command writes
    environ = {"PATH": "/usr/bin:/bin", "BASH_ENV": "/$(sh x.sh)", "ENV": "/`sh x.sh`"}
    env = hook_env(environ, [ws])
    subprocess.run(["/bin/bash", "-c", "true"], cwd=ws, env=env, check=True, capture_output=True)
    ran = planted.read_text() if planted.exists() else ""
    kept = {name: env[name] for name in ("BASH_ENV", "ENV") if name in env}
    assert not kept and not ran, f"kept {kept}; the hook's bash ran workspace code: {ran!r}"
    assert hook_env({"PATH": "/usr/bin:/bin", "BASH_ENV": "/etc/hostname"}, [ws]).get("BASH_ENV") == "/etc/hostname"
