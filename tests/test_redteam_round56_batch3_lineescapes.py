"""Round 56: a task's previews were bounded in characters, but its results line is JSON.

`shellrt.batch.worker.RESULT_PREVIEW_BYTES` (16 MiB, round 23) bounds what one task's previews add
to its results line, counted as ``len()`` of the text. JSON writes a control character as a six-byte
``\\u0001`` escape (and `one_line` writes U+2028, U+2029 and U+0085 the same way): a task whose
commands print ``\\x01`` (``tr '\\0' '\\1'``, 2 MB per command) made a 96 MB results line from a
200-byte task line, six times the bound, and the harness held it (and its copies) in memory.
Previews are now charged what they cost in the line as written.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shellrt.batch.results import CommandOutcome, TaskResult
from shellrt.batch.worker import (
    COLLECT_NAME_BYTES,
    RESULT_PREVIEW_BYTES,
    CollectTooLargeError,
    _bound_previews,
    _NameBytes,
)
from shellrt.protocol._one_line import one_line
from tests._batch_helpers import run_tasks
from tests._bwrap_session import require_bwrap

_PER_COMMAND = 1_000_000
#: Commands enough for twice the bound at one byte a character.
_COUNT = 2 * RESULT_PREVIEW_BYTES // (2 * _PER_COMMAND) + 2


def _line_size(outcomes: list[CommandOutcome]) -> int:
    result = TaskResult(id="t", status="ok", commands=outcomes)
    return len(one_line(result.model_dump_json()).encode("utf-8"))


def test_escaped_characters_count_what_they_take_in_the_line() -> None:
    room, kept = RESULT_PREVIEW_BYTES, []
    for text in ("\x01" * _PER_COMMAND, "\u2028" * _PER_COMMAND, "\x85" * _PER_COMMAND) * (_COUNT // 3 + 1):
        outcome, room = _bound_previews(
            CommandOutcome(index=len(kept), command="c", preview=text, stderr=text), room
        )
        kept.append(outcome)
    size = _line_size(kept)
    assert size < RESULT_PREVIEW_BYTES + (1 << 20), f"a results line of {size:,} bytes"
    assert kept[0].preview == "\x01" * _PER_COMMAND and not kept[0].truncated  # what fits stays whole
    assert kept[-1].preview == "" and kept[-1].truncated  # past the bound: dropped, marked


def test_plain_previews_keep_the_bound_they_had() -> None:
    room, kept = RESULT_PREVIEW_BYTES, []
    for _ in range(_COUNT):
        outcome, room = _bound_previews(
            CommandOutcome(index=len(kept), command="c", preview="x" * _PER_COMMAND, stderr="y" * _PER_COMMAND),
            room,
        )
        kept.append(outcome)
    whole = [o for o in kept if o.preview]
    assert len(whole) == RESULT_PREVIEW_BYTES // (2 * _PER_COMMAND + 64)  # as many as before (8 here)


def test_a_task_printing_control_characters_keeps_its_line_bounded(tmp_path: Path) -> None:
    require_bwrap()
    fat = (
        f"head -c {_PER_COMMAND} /dev/zero | tr '\\0' '\\1'; "
        f"head -c {_PER_COMMAND} /dev/zero | tr '\\0' '\\2' >&2"
    )
    task = {"id": "ctl", "sandbox": "bwrap", "commands": [fat] * _COUNT, "collect": {"preview_bytes": _PER_COMMAND}}
    proc, results = run_tasks(tmp_path, [task, {"id": "after", "sandbox": "bwrap", "commands": ["echo ok"]}],
                              timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = (tmp_path / "results.jsonl").read_bytes().splitlines()
    size = max(map(len, lines))
    assert size < RESULT_PREVIEW_BYTES + (1 << 20), f"a results line of {size:,} bytes"  # was 96 MB
    commands = results["ctl"]["commands"]
    assert [c["exit_code"] for c in commands] == [0] * _COUNT  # every command ran and is reported
    assert commands[0]["preview"] == "\x01" * _PER_COMMAND
    assert commands[-1]["preview"] == "" and commands[-1]["truncated"]
    assert results["after"]["status"] == "ok"
    assert json.loads(lines[0])["id"] == "ctl"


def test_collected_names_count_what_they_take_in_the_line() -> None:
    """The same for ``collect.files`` names (round 37's `COLLECT_NAME_BYTES`): a name of control
    characters (valid UTF-8, 255 bytes a part) takes six times its bytes in the line's ``files``."""
    names = _NameBytes("matches")
    name, held = "\x01" * 255, []
    with pytest.raises(CollectTooLargeError):
        for _ in range(2 * COLLECT_NAME_BYTES // 255):
            names.hold(name)
            held.append(name)
    size = len(TaskResult(id="t", status="ok", files=held).model_dump_json().encode())
    assert size < COLLECT_NAME_BYTES + (1 << 20), f"a results line of {size:,} bytes"
    plain = _NameBytes("matches")
    for _ in range(COLLECT_NAME_BYTES // 300):
        plain.hold("x" * 250)  # plain names: as many as before (each costs its bytes and quotes)


def test_a_name_that_is_not_utf8_is_still_charged() -> None:
    names = _NameBytes("matches")
    names.hold("bad\udcffname")  # os.fsdecode of b"bad\xffname": charged, not raised on
    assert names.left < COLLECT_NAME_BYTES
