"""Round 27, interfaces: ``shellrt run``'s options written after the command were silently dropped.

The command takes every word after its first (``nargs=REMAINDER``), so ``shellrt run 'make
deploy' --timeout 5`` ran ``make deploy --timeout 5`` without a time limit, and ``--deny-read
secret``, ``--memory 1g``, ``--network none`` or ``--sandbox bwrap`` written last were the
command's words, not limits: the run went on with less than the operator asked for, and said
nothing. A word of the command that is one of ``run``'s options is now a usage error (exit 2)
unless ``--`` marks where the command starts; the command never starts. The real CLI.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[1]


def _run(tmp_path: Path, *words: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(_ROOT), os.environ.get("PYTHONPATH")])),
        "HOME": str(tmp_path / "home"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
    }
    ws = tmp_path / "ws"
    argv = [sys.executable, "-m", "shellrt", "run", "--sandbox", "local", "--workspace", str(ws), *words]
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60, check=False)


def test_an_option_after_the_command_is_refused_not_dropped(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "home").mkdir()
    for words in (
        ("echo started > ran.txt; sleep 1; echo finished", "--timeout", "0.2"),
        ("echo started > ran.txt", "--deny-read=/etc/passwd"),
        ("echo", "started", ">", "ran.txt", "--json"),
    ):
        done = _run(tmp_path, *words)
        assert done.returncode == 2, (words, done)
        assert "shellrt run:" in done.stderr and " -- " in done.stderr, done.stderr
        assert not (tmp_path / "ws" / "ran.txt").exists(), (words, done)
    # With "--" the words are the command's, as written (and an option before it still counts).
    done = _run(tmp_path, "--timeout", "30", "--", "echo", "--timeout", "0.2")
    assert done.returncode == 0 and done.stdout == "--timeout 0.2\n", done
