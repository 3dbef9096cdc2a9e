"""Red team round 46 (review24): the lean ``shellrt run`` path's signal during its baseline walk
(round 45 iface5), read a second time.

Round 45 made a signal during the protected-files walk before the command raise an exception
(``_Interrupted``, an ``Exception``) out of the signal handler. The walk (`WorkspaceGuard.scan`)
catches ``Exception`` ("never break the command over the check"): the raise ended the walk half
way and was swallowed there, the half-walked tree became the accepted baseline, and the run went
on to `command_starts`, which wrote that baseline to the in-flight record a later session restores
from. shellrt killed then (a ``timeout -k``, an operator's second Ctrl-C turned kill, an OOM kill)
left the record behind, and the next run's recovery judged every protected file the walk had not
reached (the operator's own git hooks) as planted by "a command of an earlier shellrt", though
no command ever ran.

The test makes the two moments exact in a real ``shellrt run`` process: the signal (a real
SIGINT/SIGTERM to itself) lands while the walk checks its first protected file, and a SIGKILL
lands right after an in-flight record is written, if one is.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_HOOK = b"#!/bin/sh\necho the operator's own hook\n"

#: ``shellrt run`` with two moments made exact: a signal to itself at the walk's first protected
#: file, a SIGKILL right after an in-flight record was written (none is, once the run is cut short).
_WRAPPED = """
import os, signal, sys
from shellrt.supervisor import protect, _inflight
signum = int(sys.argv.pop(1))
check = protect.WorkspaceGuard._check_file
calls = [0]
def _check_file(self, *a, **k):
    calls[0] += 1
    if calls[0] == 1:
        os.kill(os.getpid(), signum)
    return check(self, *a, **k)
protect.WorkspaceGuard._check_file = _check_file
in_flight = _inflight.InflightRecord.in_flight
def _in_flight(self, *a, **k):
    in_flight(self, *a, **k)
    os.kill(os.getpid(), signal.SIGKILL)
_inflight.InflightRecord.in_flight = _in_flight
sys.argv = ["shellrt", *sys.argv[1:]]
import runpy
runpy.run_module("shellrt", run_name="__main__")
"""


def _env(home: Path, tmp: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("XDG_", "SHELLRT_")) or k in ("SHELLRT_EXPECT_COMPILED",)
    }
    env.update({"PYTHONPATH": str(ROOT), "TMPDIR": str(tmp), "HOME": str(home)})
    return env


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_the_walk_leaves_no_baseline_a_later_run_restores(
    tmp_path: Path, signum: int
) -> None:
    home, tmp = tmp_path / "home", tmp_path / "tmp"
    workspace = home / "repo"
    tmp.mkdir()
    hooks = []
    for d in range(6):  # nested repositories, each with the operator's own hook
        hook_dir = workspace / f"d{d}" / ".git" / "hooks"
        hook_dir.mkdir(parents=True)
        (workspace / f"d{d}" / ".git" / "HEAD").write_bytes(b"ref: refs/heads/main\n")
        hook = hook_dir / "pre-commit"
        hook.write_bytes(_HOOK)
        hook.chmod(0o755)
        hooks.append(hook)
    ran = home / "ran"
    run = [
        "run",
        "--sandbox",
        "local",
        "--workspace",
        str(workspace),
        "--",
    ]
    first = subprocess.run(
        [sys.executable, "-c", _WRAPPED, str(signum), *run, f"touch '{ran}'"],
        capture_output=True,
        text=True,
        env=_env(home, tmp),
        cwd=home,
        timeout=120,
    )
    assert not ran.exists(), first.stderr
    assert first.returncode in (128 + signum, -signal.SIGKILL), (first.returncode, first.stderr)
    later = subprocess.run(
        [sys.executable, "-m", "shellrt", *run, "true"],
        capture_output=True,
        text=True,
        env=_env(home, tmp),
        cwd=home,
        timeout=120,
    )
    for kept in set(re.findall(r"moved to (/tmp/shellrt-run-[^/]+)/quarantine", later.stderr)):
        shutil.rmtree(kept, ignore_errors=True)  # the unfixed tree's quarantine (kept below /tmp)
    gone = [str(h.relative_to(workspace)) for h in hooks if not h.is_file() or h.read_bytes() != _HOOK]
    assert not gone, (
        f"a run cut short by signal {signum} before its command left a half-walked baseline; the next "
        f"run reverted the operator's own files {gone} (first run: {first.returncode}): {later.stderr!r}"
    )
    assert first.returncode == 128 + signum, f"the run was still killed after its walk: {first.stderr!r}"
    assert later.returncode == 0, later.stderr
