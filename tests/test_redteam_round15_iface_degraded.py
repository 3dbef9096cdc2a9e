"""Red team round 15: in a degraded session the tools' own read-only allows no longer run unasked.

Round 14 made a session whose settings could not be read allow only what a person approves — but
left "what the tools allow on their own": Read, Glob and Grep inside the workspace and read-only
Bash commands still ran unasked, and the unreadable file's ``Read(...)`` deny rule (the very rule
that mattered: ``deny: Read(./.env)``) is no mask since nobody can read it. Measured on the old
code, headless, with the administrator's managed file broken: ``Read .env``, ``Grep TOKEN``,
``Glob`` and ``cat .env`` all returned the secret.

Now, degraded, every call that reads or runs anything (a path, a command, a domain) asks; only
the session's own state (TodoWrite, a task's output, ToolSearch) is still allowed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.permissions import sources
from shellrt.permissions.interfaces import ApprovalRequest, ApprovalResponse
from shellrt.runtime import Runtime

_SECRET = "TOKEN=sk-round15-secret"
_BROKEN = '{"permissions": {"deny": ["Read(./.env)", "Bash(cat:*)"]},  oops'


@pytest.fixture
def box(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A workspace holding a secret, a home, and a broken managed file that denied reading it."""
    for name in ("ws", "home"):
        (tmp_path / name).mkdir()
    (tmp_path / "ws" / ".env").write_text(_SECRET + "\n")
    managed = tmp_path / "managed-settings.json"
    managed.write_text(_BROKEN)
    monkeypatch.setattr(sources, "DEFAULT_MANAGED_PATH", managed)
    monkeypatch.delenv(sources.MANAGED_ENV, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("SHELLRT_TRUST_STORE", str(tmp_path / "trusted.json"))
    yield tmp_path


def _calls(ws: Path) -> list[dict[str, Any]]:
    inputs: list[tuple[str, dict[str, Any]]] = [
        ("Read", {"file_path": str(ws / ".env")}),
        ("Grep", {"pattern": "TOKEN", "path": str(ws), "output_mode": "content"}),
        ("Glob", {"pattern": "**/.env*", "path": str(ws)}),
        ("Bash", {"command": "cat .env"}),
        ("Bash", {"command": "head -c 100 .env | base64"}),
        ("TodoWrite", {"todos": [{"content": "x", "status": "pending", "activeForm": "doing x"}]}),
    ]
    return [{"type": "tool_use", "id": f"t{i}", "name": n, "input": v} for i, (n, v) in enumerate(inputs)]


async def _run(box: Path, **kw: Any) -> list[dict[str, Any]]:
    async with Runtime(box / "ws", "local", **kw) as rt:
        assert any("allow rules and bypass mode are disabled" in d for d in rt.diagnostics), rt.diagnostics
        out = await rt.run({"role": "assistant", "content": _calls(box / "ws")})
    results: list[dict[str, Any]] = out["content"]
    return results


def test_nothing_reads_unasked_in_a_degraded_session(box: Path) -> None:
    results = anyio.run(_run, box)
    reads, todo = results[:-1], results[-1]
    for result in reads:
        shown = json.dumps(result)
        assert "sk-round15-secret" not in shown and "c2stcm91bmQx" not in shown, shown
        assert ".env" not in shown or result["is_error"], shown
        assert result["is_error"], shown
        assert "could not be read" in shown, shown
    assert not todo.get("is_error"), todo  # the session's own state is still the model's to keep


def test_a_person_still_allows_a_read_in_a_degraded_session(box: Path) -> None:
    asked: list[str] = []

    async def approver(request: ApprovalRequest) -> ApprovalResponse:
        asked.append(request.tool_name)
        return ApprovalResponse(behavior="allow")

    results = anyio.run(lambda: _run(box, approver=approver))
    assert "sk-round15-secret" in json.dumps(results[0]), results[0]
    assert {"Read", "Grep", "Glob", "Bash"} <= set(asked), asked
    assert "TodoWrite" not in asked
