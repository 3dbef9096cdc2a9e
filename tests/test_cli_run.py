"""``shellrt run`` end to end, as an operator types it (a real child process)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sandbox._proctree import is_alive
from tests.conftest import require

ROOT = Path(__file__).resolve().parents[1]


def shellrt(*args: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "shellrt", "run", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.mark.parametrize("sandbox", ["local", "bwrap"])
def test_json_echo(tmp_path: Path, sandbox: str) -> None:
    require(sandbox != "bwrap" or shutil.which("bwrap") is not None, "bubblewrap is not installed")
    proc = shellrt("--sandbox", sandbox, "--json", "--", "echo hi", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["exit_code"] == 0 and report["timed_out"] is False
    assert report["output"] == "hi" and report["output_path"] is None
    assert report["cwd"] == str(tmp_path) and report["duration_s"] >= 0 and report["sandbox"] == sandbox


def test_default_sandbox_is_auto(tmp_path: Path) -> None:
    proc = shellrt("--json", "--", "echo hi", cwd=tmp_path)
    report = json.loads(proc.stdout)
    assert report["sandbox"] in ("bwrap", "local")
    if report["sandbox"] == "local":
        assert "warning" in proc.stderr


def test_plain_mode_streams_and_exits_with_the_code(tmp_path: Path) -> None:
    proc = shellrt("--sandbox", "none", "--", "echo out; echo err >&2; exit 3", cwd=tmp_path)
    assert proc.returncode == 3 and proc.stdout == "out\n" and proc.stderr == "err\n"


def test_words_after_double_dash_are_joined(tmp_path: Path) -> None:
    proc = shellrt("--sandbox", "local", "--", "echo", "a", "b", cwd=tmp_path)
    assert proc.stdout == "a b\n"


def test_timeout_exits_124_and_kills_everything(tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    command = f"sleep 1001 & echo $! >> {pidfile}; setsid sleep 1002 & echo $! >> {pidfile}; sleep 1005"
    start = time.monotonic()
    proc = shellrt("--sandbox", "local", "--timeout", "1", "--", command, cwd=tmp_path)
    assert time.monotonic() - start < 30  # the sleeps run ~1000 s: only a hang fails this
    assert proc.returncode == 124 and "timed out" in proc.stderr
    pids = [int(p) for p in pidfile.read_text().split()]
    assert pids and not any(is_alive(p) for p in pids)


def test_json_timeout(tmp_path: Path) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed")
    proc = shellrt("--sandbox", "bwrap", "--json", "--timeout", "0.5", "--", "echo a; sleep 30", cwd=tmp_path)
    report = json.loads(proc.stdout)
    assert proc.returncode == 124 and report["exit_code"] == 124 and report["timed_out"] is True
    assert report["output"].startswith("a\n") and "timed out" in report["output"]


def test_background_on_timeout_waits_for_the_command(tmp_path: Path) -> None:
    proc = shellrt(
        "--sandbox",
        "local",
        "--timeout",
        "0.3",
        "--background-on-timeout",
        "--",
        "echo a; sleep 0.8; echo b",
        cwd=tmp_path,
    )
    assert proc.returncode == 0 and proc.stdout == "a\nb\n" and "still running" in proc.stderr


def test_large_output_is_persisted_in_json_mode(tmp_path: Path) -> None:
    proc = shellrt("--sandbox", "local", "--json", "--", "seq 1 100000", cwd=tmp_path)
    report = json.loads(proc.stdout)
    path = Path(report["output_path"])
    try:
        assert path.read_bytes() == b"".join(b"%d\n" % i for i in range(1, 100001))
        assert len(report["output"]) < 40_000
    finally:
        path.unlink()


def test_no_command_and_bad_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from shellrt.cli import main

    assert main(["run", "--sandbox", "local", "--workspace", str(tmp_path)]) == 2
    assert "no command given" in capsys.readouterr().err
    with pytest.raises(SystemExit, match="only apply to --sandbox docker"):
        main(["run", "--sandbox", "local", "--workspace", str(tmp_path), "--image", "x", "--", "true"])
    with pytest.raises(SystemExit, match="not a directory"):
        main(["run", "--workspace", str(tmp_path / "nope"), "--", "true"])
    with pytest.raises(SystemExit, match="bridge needs --sandbox docker"):
        main(["run", "--sandbox", "bwrap", "--workspace", str(tmp_path), "--network", "bridge", "--", "true"])


def test_sandbox_options_reach_config_and_policy(tmp_path: Path) -> None:
    import argparse

    from sandbox import DockerConfig
    from shellrt.cli._sandbox_options import add_sandbox_options, parse_size, sandbox_from_args

    parser = argparse.ArgumentParser()
    add_sandbox_options(parser)
    args = parser.parse_args(
        [
            "--sandbox",
            "docker",
            "--workspace",
            str(tmp_path),
            "--image",
            "img",
            "--network",
            "bridge",
            "--memory",
            "2g",
            "--pids",
            "256",
            "--cpus",
            "1",
        ]
    )
    config, policy = sandbox_from_args(args)
    assert isinstance(config, DockerConfig) and config.image == "img"
    assert policy.network == "bridge" and policy.limits.memory_bytes == 2 << 30
    assert policy.limits.pids == 256 and policy.limits.cpus == 1.0 and policy.workspace == tmp_path
    assert parse_size("512m") == 512 << 20 and parse_size("1GiB") == 1 << 30
    auto, _ = sandbox_from_args(parser.parse_args(["--workspace", str(tmp_path)]))
    assert auto == "auto"


@pytest.mark.bwrap
@pytest.mark.anyio
async def test_one_shot_runs_bwrap_without_a_session_zygote(tmp_path: Path) -> None:
    """``shellrt run`` (one command) gets a one-off bwrap; sessions get the zygote."""
    import shutil

    from sandbox import BackendUnavailableError, SandboxPolicy
    from sandbox.bwrap import BwrapBackend
    from shellrt.runtime import resolve_sandbox
    from tests.conftest import require

    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    policy = SandboxPolicy(workspace=tmp_path)
    for choice, one_shot, persistent in (("bwrap", True, False), ("auto", True, False), ("bwrap", False, True)):
        try:
            backend, _ = await resolve_sandbox(choice, policy, one_shot=one_shot)
        except BackendUnavailableError as exc:
            require(False, f"bwrap unusable here: {exc}")
        try:
            assert isinstance(backend, BwrapBackend) and backend.persistent is persistent, choice
        finally:
            await backend.close()
