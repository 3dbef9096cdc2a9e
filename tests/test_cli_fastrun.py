"""The lean local ``shellrt run`` behaves as the full path does, and is taken only where it may be.

Each case runs the same command line twice, in real child processes: through
``python -m shellrt run`` (a plain local run: the lean path, `shellrt.cli._local_run`)
and through `shellrt.cli.run.run_full` (the async supervisor over the local
backend). Exit status, stdout and stderr must match, as must what is left
behind (processes, planted files, temp dirs).
"""

from __future__ import annotations

import argparse
import fcntl
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest

from shellrt.cli import build_parser
from shellrt.cli._fastrun import eligible
from tests._proc_words import shown_words

ROOT = Path(__file__).resolve().parents[1]

#: Runs ``shellrt run <argv>`` through the full path (what ``--json`` and other sandboxes use).
_FULL = """
import sys
from shellrt.cli import build_parser
from shellrt.cli.run import run_full
args = build_parser(("run",)).parse_args(["run", *sys.argv[1:]])
words = list(args.command)
if words and words[0] == "--":
    words = words[1:]
command = words if args.no_shell else (words[0] if len(words) == 1 else " ".join(words))
sys.exit(run_full(args, command))
"""


def _env(tmp: Path) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp)}
    env.pop("SHELLRT_OUTPUT_LIMIT", None)
    return env


def _run(path: str, words: list[str], workspace: Path, tmp: Path) -> subprocess.CompletedProcess[str]:
    head = ["-m", "shellrt", "run"] if path == "lean" else ["-c", _FULL]
    return subprocess.run(
        [sys.executable, *head, "--sandbox", "local", "--workspace", str(workspace), *words],
        capture_output=True,
        text=True,
        env=_env(tmp),
        cwd=workspace,
        timeout=120,
    )


def _both(tmp_path: Path, words: list[str], setup: str = "") -> dict[str, subprocess.CompletedProcess[str]]:
    """Run ``words`` on each path, each in its own fresh workspace (prepared by ``setup``) and temp dir."""
    done = {}
    for path in ("lean", "full"):
        workspace = tmp_path / path / "ws"
        tmp = tmp_path / path / "tmp"
        workspace.mkdir(parents=True)
        tmp.mkdir()
        if setup:
            subprocess.run(["bash", "-c", setup], cwd=workspace, check=True)
        done[path] = _run(path, words, workspace, tmp)
    return done


def _held(directory: Path) -> bool:
    """Whether a live owner holds ``directory``'s lock (`sandbox._scratch.OwnedDir`)."""
    try:
        fd = os.open(directory / ".owner.lock", os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def _comparable(text: str) -> str:
    """``text`` with the per-run names (each path's dirs, the session and spool names) made alike."""
    text = re.sub(r"/(lean|full)/", "/P/", text)
    text = re.sub(r"shellrt-run-\w+", "shellrt-run-X", text)
    return re.sub(r"cmd-[0-9a-f]{6,12}-", "cmd-X-", text)


def _assert_alike(done: dict[str, subprocess.CompletedProcess[str]]) -> None:
    lean, full = done["lean"], done["full"]
    assert lean.returncode == full.returncode, (lean.stderr, full.stderr)
    assert _comparable(lean.stdout) == _comparable(full.stdout)
    assert _comparable(lean.stderr) == _comparable(full.stderr)


@pytest.mark.parametrize(
    "words",
    [
        ["--", "echo out; echo err >&2; echo more; exit 3"],
        ["--", "echo", "joined", "words"],
        ["--", "kill -TERM $$"],
        ["--", "kill -9 $$"],
        ["--no-shell", "--", "printf", "[%s]", "two words", "$HOME *", "; exit 7", ""],
        ["--no-shell", "--", "no-such-program-here"],
        ["--env", "A=1", "--env", "B=two words", "--", 'echo "$A|$B|${C-unset}"'],
        ["--", "seq 1 200000; seq 1 50000 >&2"],
        ["--", "env | grep -v -e ^SHELLRT_RUN_ID= -e ^SHELLRT_CWD_FILE= -e ^_= | sort"],
        ["--timeout", "0.5", "--", "echo a; sleep 30"],
        ["--timeout", "0", "--", "sleep 5; echo never"],  # racy with a bare echo: it may get out first
        ["--", "pwd; cd /; pwd"],
    ],
    ids=lambda w: " ".join(w)[:40],
)
def test_both_paths_agree(tmp_path: Path, words: list[str]) -> None:
    _assert_alike(_both(tmp_path, words))


def test_a_planted_hook_is_reverted_and_reported_alike(tmp_path: Path) -> None:
    plant = "mkdir -p .git/hooks && printf '#!/bin/sh\\necho pwned\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit"
    done = _both(tmp_path, ["--", plant], setup="git init -q .")
    _assert_alike(done)
    for path, proc in done.items():
        assert "pre-commit" in proc.stderr, proc.stderr
        assert not (tmp_path / path / "ws" / ".git" / "hooks" / "pre-commit").exists()
        # Below /tmp, whatever TMPDIR says (red team round 40, tenants2); named in the report.
        named = re.search(r"(/tmp/shellrt-run-\w+)/quarantine", proc.stderr)
        assert named is not None, proc.stderr
        kept = Path(named.group(1))
        assert (kept / "quarantine").is_dir(), f"{path}: the quarantine is kept for the operator"
        shutil.rmtree(kept)


def test_output_held_by_an_escaped_process_is_cut_alike(tmp_path: Path) -> None:
    # Double-forked out of the group before the first descendant poll, so only its marker finds
    # it: swept right after the shell exits. Without the marker as well, it is still below the
    # run's subreaper (`sandbox._subreaper`, `sandbox._reaper`): killed when the shell exits.
    marked = _both(tmp_path / "marked", ["--", "(setsid sleep 30 &); sleep 0.2; echo done"])
    _assert_alike(marked)
    assert marked["lean"].stdout == "done\n" and marked["lean"].stderr == ""
    hidden = "(setsid env -u SHELLRT_RUN_ID sleep 4 &); sleep 0.2; echo done"
    for words in (["--", hidden], ["--timeout", "0.5", "--", hidden]):
        unmarked = _both(tmp_path / str(len(words)), words)
        _assert_alike(unmarked)
        assert unmarked["lean"].stdout == "done\n" and unmarked["lean"].stderr == "", unmarked["lean"]


def test_nothing_is_left_running_or_on_disk(tmp_path: Path) -> None:
    marker = uuid.uuid4().hex
    command = (
        f"setsid sh -c 'sleep 1000; : {marker}' >/dev/null 2>&1 & "
        f"(env -u SHELLRT_RUN_ID nohup sh -c 'sleep 1000; : {marker}' >/dev/null 2>&1 &); echo ok"
    )
    before = set(Path("/tmp").glob("shellrt-run-*"))
    done = _both(tmp_path, ["--", command])
    _assert_alike(done)
    if os.geteuid() == 0:  # the owner's cgroup catches the one that cleared its marker (its watchdog)
        deadline = time.monotonic() + 20
        while _marked(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _marked(marker)
    else:  # without a cgroup, only the marked one is sure to die (docs/security.md)
        assert len(_marked(marker)) <= 2
        for pid in _marked(marker):
            os.kill(pid, signal.SIGKILL)
    for path in ("lean", "full"):
        assert not list((tmp_path / path / "tmp").iterdir()), f"{path} left temp dirs behind"
    # Spools go below /tmp (round 40, tenants2): a new one still there is a leftover unless a live
    # owner (another test's run) holds its lock.
    left = [p for p in set(Path("/tmp").glob("shellrt-run-*")) - before if p.exists() and not _held(p)]
    assert not left, left


@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGTERM])
def test_a_signal_kills_the_tree_and_exits_128_plus_n(tmp_path: Path, signum: int) -> None:
    marker = uuid.uuid4().hex
    workspace = tmp_path / "ws"
    workspace.mkdir()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "shellrt",
            "run",
            "--sandbox",
            "local",
            "--",
            f"sh -c 'sleep 1000; : {marker}'",
        ],
        cwd=workspace,
        env=_env(tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        # shellrt itself, its bash and the sh: the command runs (and shellrt handles signals)
        # (a fork of shellrt between its fork and exec carries its argv for a moment: CI115 saw 4)
        while len(_marked(marker)) != 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(_marked(marker)) == 3
        proc.send_signal(signum)
        assert proc.wait(30) == 128 + signum
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not _marked(marker)
    assert proc.stderr is not None and b"Traceback" not in proc.stderr.read()


def _args(*words: str) -> argparse.Namespace:
    return build_parser(("run",)).parse_args(["run", *words, "--", "true"])


def test_only_plain_local_runs_take_the_lean_path() -> None:
    assert eligible(_args("--sandbox", "local"))
    assert eligible(_args("--sandbox", "none", "--timeout", "3", "--env", "A=1", "--no-shell"))
    assert eligible(_args("--sandbox", "local", "--network", "host", "--writable", "/tmp"))
    for words in (
        (),  # auto: bwrap where it works
        ("--sandbox", "bwrap"),
        ("--sandbox", "docker"),
        ("--sandbox", "local", "--json"),
        ("--sandbox", "local", "--cwd", "sub"),
        ("--sandbox", "local", "--user", "root"),
        ("--sandbox", "local", "--background-on-timeout"),
        ("--sandbox", "local", "--pids", "1"),  # refused by the full path's policy check
        ("--sandbox", "local", "--memory", "1g"),
        ("--sandbox", "local", "--cpus", "1"),
        ("--sandbox", "local", "--network", "proxied"),
        ("--sandbox", "local", "--allow-domain", "pypi.org"),
        ("--sandbox", "local", "--deny-domain", "x.org"),
        ("--sandbox", "local", "--image", "busybox"),
        ("--sandbox", "local", "--export", "out"),
        ("--sandbox", "local", "--bind"),
        ("--sandbox", "local", "--pull", "never"),
    ):
        assert not eligible(_args(*words)), words


def test_an_option_the_lean_path_does_not_know_takes_the_full_path() -> None:
    """An allow-list: an option added to ``run`` later is never silently ignored by the lean path."""
    args = _args("--sandbox", "local")
    args.some_future_option = "on"
    assert not eligible(args)
    args.some_future_option = None  # left at its default: still plain
    assert eligible(args)


def _marked(marker: str) -> list[int]:
    found = []
    for proc in psutil.process_iter():
        try:
            if any(marker in part for part in shown_words(proc.pid)):
                found.append(proc.pid)
        except psutil.Error:
            continue
    return found


@pytest.mark.parametrize("path", ["lean", "full"])
def test_a_reader_that_went_away_ends_the_run_with_141(tmp_path: Path, path: str) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # like `| head` that has exited: every write fails with EPIPE
    head = ["-m", "shellrt", "run"] if path == "lean" else ["-c", _FULL]
    try:
        proc = subprocess.run(
            [sys.executable, *head, "--sandbox", "local", "--workspace", str(tmp_path), "--", "yes"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(tmp_path),
            timeout=60,  # `yes` never ends by itself: only the kill ends this run
        )
    finally:
        os.close(write_end)
    assert proc.returncode == 141, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
