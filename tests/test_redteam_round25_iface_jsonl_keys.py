"""Round 25, interfaces: a JSONL line read two ways.

Every JSONL line is read by the strict reader (a repeated key is refused: round 12), except the
first look for an interrupt, which used Python's lenient reader: ``{"type": "tool_use", …,
"type": "interrupt"}`` was an interrupt to shellrt (the last key wins) while a guard or log in
front that reads the first key saw a tool_use, and it stopped the running calls. It is now
refused as any line with a repeated key. A real ``shellrt serve --jsonl`` process.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.test_server_jsonl import JsonlClient


def test_an_interrupt_with_a_repeated_key_is_refused_as_any_line(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    client = JsonlClient(workspace, "--sandbox", "local", "--mode", "bypassPermissions")
    try:
        use = '"type": "tool_use", "id": "g1", "name": "Bash", "input": {"command": "true"}'
        answer = client.send_raw("{" + use + ', "type": "interrupt"}')
        assert answer["type"] == "error" and "appears twice" in answer["error"], answer
        answer = client.send({"type": "interrupt"})  # a plain interrupt is still one
        assert answer["type"] == "interrupted", answer
        answer = client.send({"type": "tool_use", "id": "g2", "name": "Bash", "input": {"command": "echo ok"}})
        assert "ok" in json.dumps(answer), answer
    finally:
        assert client.close() == 0
