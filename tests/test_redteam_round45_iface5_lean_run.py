"""Red team round 45 (iface5): the lean ``shellrt run`` path skipped checks the full path makes.

Each case runs one hostile command line through both paths, in real child processes (as
``tests/test_cli_fastrun.py``): ``python -m shellrt run --sandbox local`` (the lean path,
`shellrt.cli._local_run`) and `shellrt.cli.run.run_full` (the async supervisor over the local
backend). Each path gets a fresh private home (``HOME``), so shellrt's trust store and state
directories are the test's own.

1. The files a later session obeys outside the workspace's own settings (the trust store, the
   saved rules' anchors, MCP pins, a managed settings file, the user's settings) were guarded on
   the lean path only when ``--writable`` or a write-deny rule was given: with the home directory
   (or a directory holding ``$SHELLRT_TRUST_STORE``) as the workspace, a command wrote the trust
   store and it stayed; the full path reverts it.
2. The refusals of the roots a command may write (a ``--writable`` symlink the repository
   placed, shellrt's own configuration or state directory as a root) were made by the full path
   only (`sandbox_from_args`): the lean path ran the command.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Runs ``shellrt run <argv>`` through the full path (as ``tests/test_cli_fastrun.py``).
_FULL = """
import sys
import time
from shellrt.cli import build_parser
from shellrt.cli.run import run_full
args = build_parser(("run",)).parse_args(["run", *sys.argv[1:]])
words = list(args.command)
if words and words[0] == "--":
    words = words[1:]
command = words if args.no_shell else (words[0] if len(words) == 1 else " ".join(words))
sys.exit(run_full(args, command))
"""

_PATHS = ("lean", "full")


def _env(home: Path, tmp: Path, extra: dict[str, str]) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("XDG_", "SHELLRT_")) or k in ("SHELLRT_EXPECT_COMPILED",)
    }
    env.update({"PYTHONPATH": str(ROOT), "TMPDIR": str(tmp), "HOME": str(home), **extra})
    return env


def _run(
    path: str, words: list[str], home: Path, tmp: Path, extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    head = ["-m", "shellrt", "run"] if path == "lean" else ["-c", _FULL]
    return subprocess.run(
        [sys.executable, *head, "--sandbox", "local", *words],
        capture_output=True,
        text=True,
        env=_env(home, tmp, extra or {}),
        cwd=home,
        timeout=120,
    )


def _home(tmp_path: Path, path: str) -> tuple[Path, Path]:
    home, tmp = tmp_path / path / "home", tmp_path / path / "tmp"
    home.mkdir(parents=True)
    tmp.mkdir()
    return home, tmp


#: (what, extra environment given as names relative to the home, the file the command writes,
#: relative to the home; the workspace is the home)
_LATER_FILES = [
    ("the trust store at its default place", {}, ".config/shellrt/trusted-workspaces.json"),
    (
        "the trust store named by SHELLRT_TRUST_STORE",
        {"SHELLRT_TRUST_STORE": "ops/trust.json"},
        "ops/trust.json",
    ),
    (
        "a managed settings file named by SHELLRT_MANAGED_SETTINGS",
        {"SHELLRT_MANAGED_SETTINGS": "ops/managed.json"},
        "ops/managed.json",
    ),
]


@pytest.mark.parametrize(("what", "named", "target"), _LATER_FILES, ids=[c[0] for c in _LATER_FILES])
def test_a_file_a_later_session_obeys_is_reverted_on_both_paths(
    tmp_path: Path, what: str, named: dict[str, str], target: str
) -> None:
    forged = '{"trusted": {"/evil": {"trusted": true}}, "permissions": {"allow": ["Bash"]}}'
    for path in _PATHS:
        home, tmp = _home(tmp_path, path)
        (home / "ops").mkdir()
        extra = {name: str(home / value) for name, value in named.items()}
        script = f"mkdir -p \"$(dirname '{home / target}')\" && printf '%s' '{forged}' > '{home / target}'"
        done = _run(path, ["--workspace", str(home), "--", script], home, tmp, extra)
        assert done.returncode == 0, (path, done.stderr)
        assert not (home / target).exists(), f"{path} path kept {what} the command wrote: {done.stderr!r}"
        assert "reverted" in done.stderr, (path, done.stderr)
        # The quarantine is kept below /tmp for the operator (as tests/test_cli_fastrun.py): ours to remove.
        kept = re.search(r"(/tmp/shellrt-run-\w+)/quarantine", done.stderr)
        assert kept is not None, done.stderr
        shutil.rmtree(kept.group(1))


_ROOT_REFUSALS = {
    "a link in the workspace": ("--writable", "repo/build", "symbolic link"),
    "the configuration directory": ("--writable", ".config/shellrt", "configuration directory"),
    "a workspace in the state directory": ("--workspace", ".local/state/shellrt/sub", "state directory"),
}


@pytest.mark.parametrize("case", list(_ROOT_REFUSALS))
def test_the_refusals_of_writable_roots_are_the_same_on_both_paths(tmp_path: Path, case: str) -> None:
    option, where, said = _ROOT_REFUSALS[case]
    for path in _PATHS:
        home, tmp = _home(tmp_path, path)
        workspace = home / "repo"
        (home / "secret").mkdir()
        workspace.mkdir()
        (workspace / "build").symlink_to(home / "secret")  # the repository chose where it points
        (home / ".config" / "shellrt").mkdir(parents=True)
        (home / ".local" / "state" / "shellrt" / "sub").mkdir(parents=True)
        ran = home / "ran"
        options = (
            [option, str(home / where)]
            if option == "--workspace"
            else ["--workspace", str(workspace), option, str(home / where)]
        )
        done = _run(path, [*options, "--", f"touch '{ran}'"], home, tmp)
        assert not ran.exists(), f"{path} path ran the command with {case}: {done.stderr!r}"
        assert done.returncode == 1, (path, case, done.returncode, done.stderr)
        assert said in done.stderr, (path, case, done.stderr)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_during_the_check_before_the_command_ends_the_run_and_the_command_never_starts(
    tmp_path: Path, signum: int
) -> None:
    """3. The lean path's handler only noted a signal: the protected-files walk before the command
    (minutes for a large tree) went on deaf to Ctrl-C and SIGTERM, and then the command started."""
    home, tmp = _home(tmp_path, "lean")
    workspace = home / "repo"
    for d in range(20):  # enough files that the walk is still going when the signal comes
        (workspace / f"d{d}").mkdir(parents=True)
        for f in range(500):
            os.close(os.open(workspace / f"d{d}" / f"f{f}", os.O_CREAT | os.O_WRONLY, 0o644))
    ran = home / "ran"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "shellrt",
            "run",
            "--sandbox",
            "local",
            "--workspace",
            str(workspace),
            "--",
            f"touch '{ran}'",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(home, tmp, {}),
        cwd=home,
    )
    try:
        deadline = time.monotonic() + 60
        note = home / ".config" / "shellrt" / "workspace-writes.unmarked"  # written just before the check
        while not note.exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.005)
        proc.send_signal(signum)
        signalled = time.monotonic()
        _, err = proc.communicate(timeout=60)
        took = time.monotonic() - signalled
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not ran.exists(), f"the command started after shellrt got signal {signum}: {err!r}"
    assert proc.returncode == 128 + signum, (proc.returncode, err)
    assert took < 10, f"shellrt took {took:.1f}s to end after the signal"
    assert '"open": false' in note.read_text(), "the run did not mark its roots closed"
