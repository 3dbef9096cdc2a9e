"""Round 26, interfaces: the CLI's numbers and usage errors.

``type=float`` read ``nan``, ``inf`` and negatives, ``type=int`` negatives: ``shellrt run --timeout
nan`` died in a traceback, ``--timeout -1`` started the command and said it "timed out after
-1s", ``--pids -5``/``--cpus nan`` printed pydantic's dump inside a traceback; ``shellrt sessions rm
--older-than -5`` removed every session. And every usage error ``shellrt run`` found after its event
loop started (``--image`` without docker, a missing ``--workspace``) printed the task group's
traceback before its message. Each is now a usage error that says what to give, and the command
never starts. The real CLI, its state in a temporary directory.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parents[1]


def _shellrt(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(_ROOT), "HOME": str(tmp_path / "home"),
           "XDG_STATE_HOME": str(tmp_path / "state"), "SHELLRT_HOME": str(tmp_path / "shellrt-home")}
    (tmp_path / "home").mkdir(exist_ok=True)
    return subprocess.run([sys.executable, "-m", "shellrt", *args], capture_output=True, text=True, env=env,
                          cwd=tmp_path, stdin=subprocess.DEVNULL, timeout=120)


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (["--timeout", "nan"], "--timeout"),
        (["--timeout", "-1"], "--timeout"),
        (["--timeout", "1e309"], "--timeout"),
        (["--pids", "-5"], "--pids"),
        (["--cpus", "nan"], "--cpus"),
        (["--image", "x"], "--image"),  # a usage error found inside the event loop
    ],
)
def test_a_bad_run_option_is_a_plain_usage_error_and_nothing_runs(
    tmp_path: Path, options: list[str], named: str
) -> None:
    done = _shellrt(tmp_path, "run", "--sandbox", "local", *options, "--", "touch ran")
    assert done.returncode in (1, 2), done
    assert "Traceback" not in done.stderr and "Exception Group" not in done.stderr, done.stderr
    assert named in done.stderr, done.stderr
    assert not (tmp_path / "ran").exists(), "the command ran"


def test_a_negative_age_removes_no_session(tmp_path: Path) -> None:
    session = tmp_path / "state" / "shellrt" / "sessions" / "abc123"
    session.mkdir(parents=True)
    (session / "state.json").write_text("{}")
    done = _shellrt(tmp_path, "sessions", "rm", "--older-than", "-5")
    assert done.returncode == 2, done
    assert "--older-than" in done.stderr and "0 or more" in done.stderr, done.stderr
    assert session.exists(), "a session younger than -5 days was removed"
