"""Round 25, interfaces: ``shellrt run``'s own stderr lines quoted a directory name raw.

A hostile archive or repository names the directory the operator then runs in (or gives it
a broken settings file): ``shellrt run``'s settings diagnostic ("shellrt: settings: <path>: not
valid JSON …", "… run `shellrt trust add <path>`") printed the path as it was, so an OSC 52 in
the name wrote the operator's clipboard (and an erase sequence could hide the diagnostic that
says the deny rules are off). ``shellrt serve`` and ``shellrt tools`` escaped the same lines.
The real CLI in a subprocess, local backend.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests._mcp_support import ROOT, isolated_env

#: OSC 52 (clipboard write) and an erase-line: what a name must not carry to the terminal.
_HOSTILE = "w\x1b]52;c;Y3VybCBldmlsfHNo\x07\x1b[2Ks"


def test_run_escapes_the_settings_diagnostic_that_quotes_the_workspace(tmp_path: Path) -> None:
    workspace = tmp_path / _HOSTILE
    (workspace / ".shellrt").mkdir(parents=True)
    (workspace / ".shellrt" / "settings.json").write_text('{"permissions": {"deny": ["Write(**/a.pem)"]')
    done = subprocess.run(
        [sys.executable, "-m", "shellrt", "run", "--workspace", str(workspace), "--sandbox", "local", "--", "true"],
        capture_output=True,
        env={**os.environ, **isolated_env(tmp_path)},
        cwd=str(ROOT),
        timeout=120,
    )
    assert done.returncode == 0, done
    assert b"settings" in done.stderr and b"not valid JSON" in done.stderr, done.stderr
    assert b"\x1b" not in done.stderr and b"\x07" not in done.stderr, done.stderr
