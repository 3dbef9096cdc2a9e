"""Red team round 28, docker: PowerShell's ``Set-Location`` was not reported in docker.

Docker reports a command's cwd only when what it wrote is the kernel's ``/proc/<pid>/cwd`` at its
exit (round 27: a background task forged the file). ``Set-Location`` moves PowerShell's location,
never the process, so a pwsh ``cd`` never matched and the session stayed behind. The pwsh
wrapper now moves the process to its location before it reports (``[Environment]::
CurrentDirectory``, a chdir) and reports the process's cwd (physical, as bash's ``pwd -P``). The
analysis part runs everywhere; the run only where ``pwsh`` is installed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from shellrt.analysis.powershell import analyze_powershell
from shellrt.supervisor.shells import shell_argv


@pytest.mark.parametrize(
    "text", ["Set-Location /tmp", "sl /tmp", "cd /tmp", "Push-Location /tmp", "chdir '/tmp'"]
)
def test_the_analysis_sees_the_move(text: str) -> None:
    """The session tracks (asks for) the cwd of a command that moves."""
    assert analyze_powershell(text).cd_targets == ["/tmp"], text


def test_the_wrapper_moves_the_process_before_it_reports() -> None:
    body = shell_argv("Set-Location /tmp", "powershell", check_host=False)[-1]
    move = body.index("[Environment]::CurrentDirectory = (Get-Location).ProviderPath")
    write = body.index("WriteAllText($env:SHELLRT_CWD_FILE, [Environment]::CurrentDirectory)")
    assert move < write and "(Get-Location).ProviderPath)" not in body, body


@pytest.mark.skipif(shutil.which("pwsh") is None, reason="pwsh is not installed")
def test_pwsh_reports_the_process_cwd(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    report = tmp_path / "cwd"
    argv = shell_argv(f"Set-Location '{tmp_path / 'link'}'", "powershell")
    env = {**os.environ, "SHELLRT_CWD_FILE": str(report)}
    subprocess.run(argv, cwd=tmp_path, env=env, check=True, timeout=60)
    assert report.read_text() == str((tmp_path / "real").resolve())
