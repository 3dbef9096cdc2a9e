"""Round 18, interfaces: a remembered "allow always" held after the file it ran was rewritten.

Left open in round 17: the person allows ``./run.sh`` (``python3 t.py``, ``npm test`` with its
``package.json``) always, having seen a benign file; under ``acceptEdits`` the model then rewrites
the file unasked (a write inside the workspace) and runs it under the remembered rule. A rule an
approval remembers now carries the fingerprints of what the approved call named
(`shellrt.permissions.content_anchor`) and asks again once they changed. Real `Runtime`
sessions on the local backend (the rules are under test, not the sandbox).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.permissions.interfaces import ApprovalRequest, ApprovalResponse, CommandPart
from shellrt.runtime import Runtime

_EVIL_SH = "#!/bin/sh\\ntouch pwned\\n"
_EVIL_PY = "open('pwned', 'w')\\n"


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "ws"
    root.mkdir()
    (tmp_path / "home").mkdir()
    (root / "run.sh").write_text("#!/bin/sh\necho benign\n")
    (root / "run.sh").chmod(0o755)
    (root / "t.py").write_text("print('benign')\n")
    (root / "Makefile").write_text("all:\n\t@echo benign\n")
    (root / "tool.py").write_text("print('benign')\n")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("SHELLRT_TRUST_STORE", str(tmp_path / "trusted.json"))
    yield root


def _session(
    ws: Path, commands: list[str], remember: str = "session"
) -> tuple[list[dict[str, Any]], list[ApprovalRequest]]:
    """Runs ``commands`` under acceptEdits; the first prompt is answered "allow" with ``remember``
    ("never": denied), every later one is denied (a later call runs only when a rule covers it)."""
    asked: list[ApprovalRequest] = []

    async def approver(request: ApprovalRequest) -> ApprovalResponse:
        asked.append(request)
        if len(asked) == 1 and remember != "never":
            return ApprovalResponse(behavior="allow", remember=remember)  # type: ignore[arg-type]
        return ApprovalResponse(behavior="deny")

    async def main() -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        async with Runtime(ws, "local", approver=approver, mode="acceptEdits", trust_workspace=True) as rt:
            for i, command in enumerate(commands):
                block = {"type": "tool_use", "id": f"a{i}", "name": "Bash", "input": {"command": command}}
                out += (await rt.run({"role": "assistant", "content": [block]}))["content"]
        return out

    return anyio.run(main), asked


@pytest.mark.parametrize(
    ("command", "rewrite"),
    [
        ("./run.sh", f"printf '{_EVIL_SH}' > run.sh"),
        ("python3 t.py", f'printf "{_EVIL_PY}" > t.py'),
        ("make", "printf 'all:\\n\\t@touch pwned\\n' > Makefile"),
        ("python3 -m tool", f'printf "{_EVIL_PY}" > tool.py'),
    ],
)
def test_a_remembered_rule_asks_again_after_its_file_was_rewritten(
    ws: Path, command: str, rewrite: str
) -> None:
    results, asked = _session(ws, [command, command, rewrite, command])
    shown = [json.dumps(r) for r in results]
    assert "benign" in shown[0] and "benign" in shown[1], shown
    assert not results[2]["is_error"], shown  # acceptEdits: the rewrite itself runs unasked
    assert not (ws / "pwned").exists(), shown  # before: the rewritten file ran under the rule
    assert results[3]["is_error"] and len(asked) == 2, shown  # asked again (and denied)
    assert command in asked[1].description


def test_a_remembered_rule_does_not_cover_a_file_made_after_the_answer(ws: Path) -> None:
    (ws / "t.py").unlink()  # approved while absent (python3 fails): a file made later is new code
    results, asked = _session(ws, ["python3 t.py", f'printf "{_EVIL_PY}" > t.py', "python3 t.py"])
    assert not (ws / "pwned").exists(), [json.dumps(r) for r in results]
    assert len(asked) == 2


def test_the_rule_holds_while_the_code_is_unchanged_and_for_files_a_command_writes(ws: Path) -> None:
    results, asked = _session(ws, ["./run.sh", "echo hi > other", "./run.sh"])
    assert "benign" in json.dumps(results[2]) and len(asked) == 1, [a.description for a in asked]
    results, asked = _session(ws, ["touch made", "touch made"])  # "made" changed: not code it runs
    assert not results[1]["is_error"] and len(asked) == 1, [a.description for a in asked]


def test_a_fifo_where_a_manifest_is_expected_is_not_opened(ws: Path) -> None:
    from shellrt.permissions.content_anchor import named_files  # new this round

    os.mkfifo(ws / "package.json")  # opening it for reading would wait for a writer forever
    part = CommandPart(text="npm test", argv=("npm", "test"), name="npm", dirs=(str(ws),))
    found: list[frozenset[tuple[str, str]]] = []
    worker = threading.Thread(target=lambda: found.append(named_files(part)), daemon=True)
    worker.start()
    worker.join(20)
    assert found and any(path.endswith("package.json") and seen.startswith("p@") for path, seen in found[0])


def test_a_project_answer_for_python_m_does_not_hold_in_another_directory(ws: Path) -> None:
    """``python3 -m tool`` runs ``tool.py`` of its directory: like ``python3 t.py`` (round 17), the
    answer is not saved for the project, where it would hold for ``tools/tool.py`` after a ``cd``."""
    (ws / "tools").mkdir()
    (ws / "tools" / "tool.py").write_text("open('../pwned', 'w')\n")
    _session(ws, ["python3 -m tool"], remember="project")
    results, asked = _session(ws, ["cd tools", "python3 -m tool"], remember="never")
    assert not (ws / "pwned").exists(), [json.dumps(r) for r in results]  # before: ran unasked
    assert any("tool" in a.description for a in asked)
