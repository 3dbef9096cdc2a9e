"""Red team round 48 (files8): a JSONL line cut short named none of the calls it carried.

Round 47's Left. A refused line's error names the tool_use ids on it (`tool_use_ids`), so a client
pairing results by id knows which calls did not run; but a line that stops mid-JSON -- the last
line of a client killed while writing, with no newline before EOF, or a line cut by a writer's
buffer -- was "not valid JSON" and named none, though its beginning spelled whole calls. Now a
line whose JSON is cut at its end names the ids of the calls complete before the cut (never an
id that is itself cut: ``toolu_Z`` below is never named as ``toolu_`` or ``toolu_Z``).

One real ``shellrt serve --jsonl`` child process (local backend).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _block(tool_id: str) -> str:
    return json.dumps({"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": "echo ran"}})


def test_a_line_cut_short_names_the_calls_complete_before_the_cut(tmp_path: Path) -> None:
    home, ws = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    ws.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "SHELLRT_"))}
    env.update({"PYTHONPATH": str(ROOT), "HOME": str(home), "SHELLRT_HOME": str(home / "state")})
    message = '{"role": "assistant", "content": [' + _block("toolu_A") + ", " + _block("toolu_B") + ", "
    lines = [
        # 1. cut inside a third call's id (a writer's buffer): A and B were whole
        message + '{"type": "tool_use", "id": "toolu_Z',
        # 2. one call, cut inside its input: its id was whole
        _block("toolu_C")[:-12],
        # 3. the last line, cut at EOF with no newline: A2 whole, the next block cut after its id
        '{"role": "assistant", "content": [' + _block("toolu_A2") + ', {"type": "tool_use", "id": "toolu_Y", "na',
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "shellrt", "serve", "--jsonl", "--sandbox", "local", "--mode", "bypassPermissions",
         "--workspace", str(ws)],
        input="\n".join(lines).encode(),
        capture_output=True,
        env=env,
        cwd=ws,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    answers = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(answers) == 3, answers
    wrong = []
    for number, expected in ((1, ["toolu_A", "toolu_B"]), (2, ["toolu_C"]), (3, ["toolu_A2", "toolu_Y"])):
        answer = answers[number - 1]
        if not (
            answer.get("type") == "error"
            and answer.get("line") == number
            and answer.get("tool_use_ids") == expected
            and "did not run" in answer["error"]
        ):
            wrong.append(answer)
    assert not wrong, f"{len(wrong)} of 3 cut lines did not name their calls: {wrong}"
    assert "toolu_Z" not in proc.stdout.decode() and "ran" not in proc.stdout.decode()


def test_every_cut_of_a_line_names_only_ids_it_spelled_whole() -> None:
    from shellrt.server.jsonl import _readable_ids

    line = (
        '{"role": "assistant", "content": [' + _block("toolu_A") + ", "
        + '{"type": "tool_use", "id": "toolu_\\u00e9\\"q", "name": "Bash", "input": {"n": 12345}}, '
        + _block("toolu_C") + "]}"
    )
    full = ["toolu_A", 'toolu_\u00e9"q', "toolu_C"]
    assert _readable_ids(line) == full
    for cut in range(len(line)):
        for end in ("", "\n"):
            named = _readable_ids(line[:cut] + end)
            assert named == full[: len(named)], (cut, named)
            for tool_id in named:  # each id named was read to its closing quote
                assert line[:cut].find(json.dumps(tool_id)[:-1]) + len(json.dumps(tool_id)) <= cut, (cut, named)
    # a fault within the line (not a cut) still names none, and a repeated id is no id
    assert _readable_ids(line.replace('"toolu_C"', '"toolu_C" x')) == []
    assert _readable_ids('{"type": "tool_use", "id": "a", "id": "b", "na') == []
    # past the reader's bound (a Python step per element) a cut line names none, at once
    many = '{"role": "assistant", "content": [' + "{}, " * 5_000 + _block("toolu_far")[:-3]
    assert _readable_ids(many) == []
