"""Round 27 wave 2, interfaces: ``shellrt serve``'s limits from the environment, attacked.

``SHELLRT_OUTPUT_LIMIT=abc`` ended serve with a traceback (an exception group), and
``SHELLRT_MAX_PARALLEL_CALLS=0`` / ``SHELLRT_MAX_BACKGROUND_TASKS=many`` were not read until a
call needed them: serve started and answered its client, and the first parallel batch or
background command failed. Each limit is now read at start: a bad value is a usage error
(exit 2) naming the variable, with no traceback, and nothing is served. Real ``shellrt serve``
processes (stdin closed: a good configuration serves and ends at once).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests._serve_cli import serve_command

_BAD = {
    "SHELLRT_OUTPUT_LIMIT": "abc",
    "SHELLRT_OUTPUT_RESERVE": "-1",
    "SHELLRT_MAX_PARALLEL_CALLS": "0",
    "SHELLRT_MAX_BACKGROUND_TASKS": "many",
}


def test_a_bad_limit_in_the_environment_is_a_usage_error(tmp_path: Path) -> None:
    argv, env = serve_command(tmp_path)
    procs = {
        name: subprocess.Popen(
            argv,
            env={**env, name: value},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for name, value in _BAD.items()
    }
    for name, proc in procs.items():
        _, err = proc.communicate(timeout=120)
        text = err.decode()
        assert proc.returncode == 2, (name, proc.returncode, text[-600:])
        assert f"shellrt serve: {name}=" in text and "Traceback" not in text, (name, text[-600:])
