"""Red team round 47 (iface6): a JSONL line refused before it ran did not say which calls it carried.

The JSONL protocol answers every line, and a line it refuses before handling it (not UTF-8, JSON
other readers would read differently, a message whose blocks are malformed) with
``{"type": "error", "line": N}``. A client pairs results with its calls by ``tool_use`` id (every
tool_use gets exactly one tool_result): the error named no id, so the client could not tell
which of its calls did not run (round 45's Left, for the line that is not UTF-8). Now such an
error carries ``tool_use_ids``: the ids readable on the line (a line too large to read, or one
whose ids themselves are ambiguous, names none), and says that they did not run.

One real ``shellrt serve --jsonl`` child process (local backend), every case on its session.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _tool_use(tool_id: str, command: str) -> dict[str, object]:
    return {"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": command}}


def _message(*blocks: dict[str, object]) -> bytes:
    return json.dumps({"role": "assistant", "content": list(blocks)}).encode()


def test_refused_lines_name_the_tool_use_ids_that_did_not_run(tmp_path: Path) -> None:
    home, ws = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    ws.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "SHELLRT_"))}
    env.update({"PYTHONPATH": str(ROOT), "HOME": str(home), "SHELLRT_HOME": str(home / "state")})
    lines = [
        # 1. not UTF-8: a Latin-1 byte in the command (an old file's ``café``)
        _message(_tool_use("toolu_A", "echo PLACEHOLDER")).replace(b"PLACEHOLDER", b"caf\xe9"),
        # 2. a key twice: other readers would run another command
        b'{"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_B", "name": "Bash", '
        b'"input": {"command": "echo one", "command": "echo two"}}]}',
        # 3. a message with one malformed block: none of its calls runs
        _message(_tool_use("toolu_C", "echo three"), {"type": "tool_use", "id": "toolu_D", "input": {}}),
        # 4. the id itself twice: ambiguous, so no id is named
        b'{"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_E", "id": "toolu_F", '
        b'"name": "Bash", "input": {"command": "echo five"}}]}',
        # 5. the session goes on
        _message(_tool_use("toolu_G", "echo served")),
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "shellrt", "serve", "--jsonl", "--sandbox", "local", "--mode", "bypassPermissions",
         "--workspace", str(ws)],
        input=b"\n".join(lines) + b"\n",
        capture_output=True,
        env=env,
        cwd=ws,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    answers = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(answers) == 5, answers
    wrong = []
    for number, expected in ((1, ["toolu_A"]), (2, ["toolu_B"]), (3, ["toolu_C", "toolu_D"])):
        answer = answers[number - 1]
        if not (
            answer.get("type") == "error"
            and answer.get("line") == number
            and answer.get("tool_use_ids") == expected
            and all(i in answer["error"] for i in expected)
            and "did not run" in answer["error"]
        ):
            wrong.append(answer)
    assert not wrong, f"{len(wrong)} of 3 refused lines did not name their calls: {wrong}"
    assert answers[3]["type"] == "error" and answers[3].get("tool_use_ids", []) == []
    served = answers[4]["content"][0]
    assert served["tool_use_id"] == "toolu_G" and "served" in json.dumps(served)
