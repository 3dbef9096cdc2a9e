"""Red team round 50 (hooks9): which command substitutions keep a hook line trackable.

Since round 49 any substitution recorded the whole workspace, so a notification hook
(``notify-send "$(jq -r .message)"``) stopped after the first write there (round 49's Left). A
substitution that runs a data program and only becomes a plain argument of a program that never
runs its operands (`hook_substitutions`) now keeps the line trackable; both directions are
tested: a substitution that runs workspace code, or whose output can become a command or an
option that runs one, still records the tree. The narrow cases failed before (the tree was
recorded); the wide ones held before and are kept as the other direction.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from shellrt.permissions.hook_files import WHOLE_WORKSPACE, compare_hook_files, hook_files

_NARROW = [
    'notify-send "$(jq -r .message)"',
    'say "$(jq -r .message)"',
    'echo "Claude: $(jq -r .message)" `date`',
    'logger -t claude "$(jq -r .message)" && notify-send "$(jq -r .title)" "$(cat .claude/msg.txt)"',
    "printf '%s\\n' \"$(jq -r .message)\"",
]
_WIDE = [
    'notify-send "$(./summarize)"',  # workspace code runs in the substitution
    'notify-send "$(python3 tools/s.py)"',
    'notify-send "$(jq -r .m | sh)"',  # a shell runs the data
    'echo "$(jq -r .cmd)" | xargs python3',  # the printed text becomes a command
    'printf "$(jq -r .a)" "$(jq -r .b)" "$(jq -r .c)"; python3 -P x.py',  # printf -v PATH …
    'osascript -e "$(jq -r .message)"',  # runs its argument
    'timeout 5 notify-send "$(jq -r .message)"',  # a wrapper: not the printer itself
    'notify-send "$HOME $(jq -r .message)"',  # a variable beside it
    'notify-send "$(cat <(jq -r .message))"',  # a process substitution
    'jq -r .m > "$(jq -r .path)"',  # a redirection chosen at run time
    'M="$(jq -r .message)" notify-send hi',  # an assignment
    "sh <<EOF\n$(jq -r .cmd)\nEOF",  # into a here-document
]


def _ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / ".claude").mkdir(parents=True)
    (ws / ".claude" / "msg.txt").write_text("hello\n")
    (ws / "src").mkdir()
    return ws


@pytest.mark.parametrize("hook", _NARROW)
def test_a_printed_data_substitution_stays_trackable(tmp_path: Path, hook: str) -> None:
    ws = _ws(tmp_path)
    record = hook_files(ws, [hook])
    assert record.untrackable == () and WHOLE_WORKSPACE not in record.files, record
    (ws / "src" / "conftest.py").write_text("x = 1\n")  # a command's write elsewhere in the tree
    assert compare_hook_files(record, hook_files(ws, [hook])) is None, hook


def test_a_file_the_substitution_reads_is_recorded(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    hook = _NARROW[3]
    record = hook_files(ws, [hook])
    assert ".claude/msg.txt" in record.files, record
    (ws / ".claude" / "msg.txt").write_text("changed\n")
    assert compare_hook_files(record, hook_files(ws, [hook])) is not None


@pytest.mark.parametrize("hook", _WIDE)
def test_a_substitution_that_may_run_code_records_the_tree(tmp_path: Path, hook: str) -> None:
    ws = _ws(tmp_path)
    record = hook_files(ws, [hook])
    assert record.untrackable and WHOLE_WORKSPACE in record.files, record


def test_the_printed_form_runs_nothing_of_the_workspace(tmp_path: Path) -> None:
    """The premise of the narrow direction, with the programs installed here: a message that is a
    command, an option or a glob is only printed (``echo``, ``printf`` with a static format), and a
    planted ``jq``/``date`` in the workspace is not what runs (the runner's PATH is the host's)."""
    ws = _ws(tmp_path)
    for name in ("jq", "date", "logger"):
        (ws / name).write_text("#!/bin/sh\necho PLANTED >&2\n")
        (ws / name).chmod(0o755)
    message = '{"message": "$(./jq) `./date` -f /etc/hostname *"}'
    for hook in ('echo "Claude: $(jq -r .message)" `date`', "printf '%s\\n' \"$(jq -r .message)\""):
        done = subprocess.run(
            ["bash", "-c", hook],
            cwd=ws,
            input=message,
            env={"PATH": os.environ["PATH"], "CLAUDE_PROJECT_DIR": str(ws)},
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert done.returncode == 0 and "PLANTED" not in done.stdout + done.stderr, (hook, done)
        assert "$(./jq)" in done.stdout + done.stderr, (hook, done)
