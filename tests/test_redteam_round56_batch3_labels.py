"""Round 56: a task's command labels were copied into its results line unbounded, and grown.

Each result names its command: the shell text, or an argv shell-quoted (`shlex.join`). A quote in
an argv word becomes ``'"'"'`` there, and ``'\\"'\\"'`` (7 bytes) in the JSON line: a 20 MB task line
of 200 argv commands (one word of 100,000 ``'`` each) wrote a 140 MB results line and took the
harness to 450 MB resident (the loader allows 64 MiB lines: ~450 MB lines). A task's labels now
share one bound in the line as written (`RESULT_LABEL_BYTES`); past it a label keeps its head and
tail around a note, and every command still has its exit code.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from shellrt.batch.results import CommandOutcome
from tests._batch_helpers import run_tasks
from tests._bwrap_session import require_bwrap

#: The bound the fix sets (`shellrt.batch.worker.RESULT_LABEL_BYTES`), written out so the real run
#: below also runs, and fails, on a tree without it.
_BOUND = 16 << 20


def test_labels_share_one_bound_as_written() -> None:
    from shellrt.batch.worker import RESULT_LABEL_BYTES, _bound_label

    assert RESULT_LABEL_BYTES == _BOUND
    room, kept = RESULT_LABEL_BYTES, []
    label = "true " + "'\"'\"'" * 200_000  # 1 MB of text, 1.4 MB as JSON
    for index in range(2 * RESULT_LABEL_BYTES // len(label)):
        outcome, room = _bound_label(CommandOutcome(index=index, command=label), room)
        kept.append(outcome)
    assert kept[0].command == label  # what fits stays whole
    assert len(kept[-1].command) < 10_000 and kept[-1].command.startswith("true ")
    total = sum(len(CommandOutcome(index=0, command=o.command).model_dump_json()) for o in kept)
    assert total < RESULT_LABEL_BYTES + (1 << 20), f"labels of {total:,} bytes"


def test_a_task_of_quoted_argv_words_keeps_its_line_bounded(tmp_path: Path) -> None:
    require_bwrap()
    count = 2 * _BOUND // 700_000 + 2  # 100,000 quotes: ~700 KB a label as written
    commands = [{"argv": ["true", "'" * 100_000]} for _ in range(count)] + ["echo last"]
    proc, results = run_tasks(
        tmp_path, [{"id": "q", "sandbox": "bwrap", "commands": commands}], timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    size = max(map(len, (tmp_path / "results.jsonl").read_bytes().splitlines()))
    assert size < _BOUND + (2 << 20), f"a results line of {size:,} bytes"
    got = results["q"]["commands"]
    assert len(got) == count + 1 and got[-1]["command"] == "echo last" and got[-1]["exit_code"] == 0
    assert got[0]["command"] == shlex.join(["true", "'" * 100_000])  # what fits stays whole
    assert got[-2]["command"].startswith("true ") and len(got[-2]["command"]) < 10_000


def test_past_the_bound_cut_labels_are_charged_too() -> None:
    """10,000 commands (`MAX_COMMANDS`) of labels cut to head and tail would still add up: once even
    those do not fit, a label is a short note naming its length."""
    from shellrt.batch.worker import _bound_label

    label = "\x01" * 50_000  # 300 KB as JSON; its cut ~1.3 KB
    outcome, room = _bound_label(CommandOutcome(index=0, command=label), 2_000)
    assert outcome.command != label and outcome.command.startswith("\x01") and room < 2_000
    outcome, left = _bound_label(CommandOutcome(index=1, command=label), room)
    assert "50,000 characters" in outcome.command and len(outcome.command) < 120 and left <= room
