"""``shellrt run`` for harnesses and operators: --json with stdout and stderr apart, --env, --user,
--cwd, --no-shell, and docker's --bind and --pull (real child processes, real sandboxes)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import require

ROOT = Path(__file__).resolve().parents[1]
DEBIAN = "shellrt-test-debian"
ABSENT_IMAGE = "shellrt-test-absent-image:never-built"


def shellrt(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "shellrt", "run", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def sandbox_args(sandbox: str) -> list[str]:
    if sandbox == "bwrap":
        require(shutil.which("bwrap") is not None, "bubblewrap is not installed")
    if sandbox == "docker":
        require(
            shutil.which("docker") is not None or os.path.exists("/var/run/docker.sock"), "no docker here"
        )
        return ["--sandbox", "docker", "--image", DEBIAN]
    return ["--sandbox", sandbox]


@pytest.mark.parametrize("sandbox", ["local", "bwrap", "docker"])
def test_json_keeps_stdout_and_stderr_apart(tmp_path: Path, sandbox: str) -> None:
    proc = shellrt(
        *sandbox_args(sandbox), "--json", "--", "echo out; echo err >&2; echo more; exit 3", cwd=tmp_path
    )
    assert proc.returncode == 3, proc.stderr
    report = json.loads(proc.stdout)
    assert report["stdout"] == "out\nmore\n" and report["stderr"] == "err\n"
    assert report["stdout_bytes"] == 9 and report["stderr_bytes"] == 4 and report["total_bytes"] == 13
    assert report["stdout_truncated"] is False and report["stderr_truncated"] is False
    assert report["stdout_path"] is None and report["stderr_path"] is None and report["argv"] is None


def test_json_truncation_is_per_stream_with_its_own_file(tmp_path: Path) -> None:
    proc = shellrt("--sandbox", "local", "--json", "--", "seq 1 100000 >&2; echo small", cwd=tmp_path)
    report = json.loads(proc.stdout)
    assert report["stdout"] == "small\n" and report["stdout_truncated"] is False
    assert report["stderr_truncated"] is True and report["stderr_bytes"] == 588_895
    stderr_file = Path(report["stderr_path"])
    try:
        assert stderr_file.read_bytes() == b"".join(b"%d\n" % i for i in range(1, 100001))
        assert Path(report["stdout_path"]).read_bytes() == b"small\n"
    finally:
        shutil.rmtree(stderr_file.parent.parent, ignore_errors=True)  # the kept session dir


@pytest.mark.parametrize("sandbox", ["local", "bwrap", "docker"])
def test_no_shell_passes_each_word_intact(tmp_path: Path, sandbox: str) -> None:
    words = ["two words", 'it\'s "quoted"', "line\nbreak", "", "$HOME *", "; exit 7"]
    proc = shellrt(
        *sandbox_args(sandbox), "--json", "--no-shell", "--", "printf", "[%s]", *words, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["stdout"] == "".join(f"[{w}]" for w in words)
    assert report["argv"] == ["printf", "[%s]", *words]


def test_words_without_no_shell_are_still_shell_text(tmp_path: Path) -> None:
    proc = shellrt("--sandbox", "local", "--", "echo", "a", "&&", "echo", "b", cwd=tmp_path)
    assert proc.stdout == "a\nb\n"


@pytest.mark.parametrize("sandbox", ["local", "bwrap"])
def test_env_sets_and_passes_through(tmp_path: Path, sandbox: str) -> None:
    proc = shellrt(
        *sandbox_args(sandbox),
        "--env",
        "GREETING=hello world",
        "--env",
        "EMPTY=",
        "--env",
        "FROM_CALLER",
        "--",
        'printf "%s|%s|%s|%s" "$GREETING" "${EMPTY-unset}" "$FROM_CALLER" "${NOT_PASSED-unset}"',
        cwd=tmp_path,
        env={"FROM_CALLER": "the caller's", "NOT_PASSED": "secret"},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "hello world||the caller's|unset"


@pytest.mark.parametrize("bad", ["=value", "1ABC=x", "A-B=x", ""])
def test_bad_env_says_key_value_expected(tmp_path: Path, bad: str) -> None:
    proc = shellrt("--sandbox", "local", "--env", bad, "--", "true", cwd=tmp_path)
    assert proc.returncode == 2 and "KEY=VALUE expected" in proc.stderr, proc.stderr


def test_env_name_missing_from_the_callers_environment(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "SHELLRT_TEST_UNSET_VAR"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "shellrt",
            "run",
            "--sandbox",
            "local",
            "--env",
            "SHELLRT_TEST_UNSET_VAR",
            "--",
            "true",
        ],
        cwd=tmp_path,
        env={**env, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    assert "SHELLRT_TEST_UNSET_VAR is not set in your environment" in proc.stderr


@pytest.mark.parametrize("sandbox", ["local", "bwrap", "docker"])
def test_cwd_is_honoured_outside_the_workspace(tmp_path: Path, sandbox: str) -> None:
    proc = shellrt(
        *sandbox_args(sandbox), "--json", "--cwd", "/usr/bin", "--no-shell", "--", "pwd", cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["stdout"] == "/usr/bin\n"


@pytest.mark.parametrize("sandbox", ["local", "bwrap", "docker"])
def test_cwd_that_does_not_exist_is_an_error(tmp_path: Path, sandbox: str) -> None:
    for where in ("/no-such-dir-shellrt", "relative/missing"):
        proc = shellrt(*sandbox_args(sandbox), "--json", "--cwd", where, "--", "echo ran", cwd=tmp_path)
        assert proc.returncode == 125, proc.stderr
        assert "--cwd" in proc.stderr and where in proc.stderr and proc.stdout == ""


def test_relative_cwd_is_from_the_workspace(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    proc = shellrt("--sandbox", "local", "--cwd", "sub", "--", "pwd", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout == f"{tmp_path}/sub\n"


@pytest.mark.parametrize("sandbox", ["local", "bwrap"])
def test_user_is_refused_where_identities_cannot_switch(tmp_path: Path, sandbox: str) -> None:
    proc = shellrt(*sandbox_args(sandbox), "--user", "root", "--", "echo ran", cwd=tmp_path)
    assert proc.returncode == 125 and "cannot run as user 'root'" in proc.stderr and "docker" in proc.stderr
    assert proc.stdout == ""


@pytest.mark.parametrize("flags", [["--bind"], ["--pull", "missing"], ["--image", "x"]])
@pytest.mark.parametrize("sandbox", ["local", "bwrap", "auto"])
def test_docker_options_are_refused_elsewhere(tmp_path: Path, sandbox: str, flags: list[str]) -> None:
    proc = shellrt("--sandbox", sandbox, *flags, "--", "true", cwd=tmp_path)
    assert proc.returncode != 0 and f"{flags[0]} only apply to --sandbox docker" in proc.stderr


def test_docker_bind_writes_the_workspace_itself(tmp_path: Path) -> None:
    copy = shellrt(*sandbox_args("docker"), "--", "echo copied > made.txt", cwd=tmp_path)
    assert copy.returncode == 0, copy.stderr
    assert not (tmp_path / "made.txt").exists()  # copy mode: the host directory is untouched
    bound = shellrt(*sandbox_args("docker"), "--bind", "--", "echo bound > made.txt", cwd=tmp_path)
    assert bound.returncode == 0, bound.stderr
    assert (tmp_path / "made.txt").read_text() == "bound\n"


@pytest.mark.parametrize("pull", ["never", "missing"])
def test_absent_image_names_the_image_and_the_way_out(tmp_path: Path, pull: str) -> None:
    # No registry is reachable here: "missing" tries one and must say what to do instead.
    sandbox_args("docker")
    proc = shellrt("--sandbox", "docker", "--image", ABSENT_IMAGE, "--pull", pull, "--", "true", cwd=tmp_path)
    assert proc.returncode == 125, proc.stderr
    assert ABSENT_IMAGE in proc.stderr and "docker load" in proc.stderr and "docker build" in proc.stderr
    if pull == "never":
        assert "not present locally" in proc.stderr and "--pull missing" in proc.stderr
    else:
        assert "could not pull" in proc.stderr and "--pull never" in proc.stderr


def test_pull_always_needs_a_registry_even_for_a_local_image(tmp_path: Path) -> None:
    sandbox_args("docker")
    proc = shellrt("--sandbox", "docker", "--image", DEBIAN, "--pull", "always", "--", "true", cwd=tmp_path)
    assert proc.returncode == 125 and f"could not pull image {DEBIAN!r}" in proc.stderr
