"""Red team round 23 (trusted): a committed ``Bash(make test)`` rule and the ``Makefile`` it runs.

Rounds 21 and 22 left it: the trust store bound a committed ``.claude/settings.json`` to its own
bytes, not to what its allow rules run. After ``shellrt trust add``, a teammate's commit of
another ``Makefile`` (``package.json`` scripts, a script a glob rule names) ran under the rule in
the next session, unasked. ``trust add`` now pins what each committed command rule runs
(`shellrt.permissions.project_anchors`); a changed file makes the part ask, and a headless
session denies it, saying to run ``shellrt trust add`` again.
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from shellrt.permissions.trust import record_trust
from shellrt.runtime import Runtime
from tests._governance import trust_env

_CASES = {  # the rule, what it runs (file, reviewed content), the command the model sends
    "make": ("Bash(make test)", "Makefile", "test:\n\t@echo tested\n", "make test"),
    "npm": ("Bash(npm test:*)", "package.json", '{"scripts": {"test": "echo tested"}}\n', "npm test"),
    "glob": ("Bash(./scripts/*)", "scripts/t.sh", "#!/bin/sh\necho tested\n", "./scripts/t.sh"),
}


def _pulled(name: str, marker: Path) -> str:
    if name == "Makefile":
        return f"test:\n\t@touch {marker}; echo tested\n"
    if name == "package.json":
        return json.dumps({"scripts": {"test": f"touch {marker}; echo tested"}}) + "\n"
    return f"#!/bin/sh\ntouch {marker}\necho tested\n"


def _run(repo: Path, session: Path, command: str) -> dict:
    async def main() -> dict:
        async with Runtime(repo, "local", mode="default", session_dir=session) as rt:
            block = {"type": "tool_use", "id": "b1", "name": "Bash", "input": {"command": command}}
            result: dict = (await rt.run([block]))["content"][0]
            return result

    return anyio.run(main)


@pytest.mark.parametrize("case", sorted(_CASES))
def test_a_pulled_change_to_what_a_committed_rule_runs_is_not_run_unasked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """Failed 3 of 3 before: the second session ran the pulled file under the committed rule."""
    trust_env(tmp_path, monkeypatch)
    rule, name, content, command = _CASES[case]
    if case == "npm":
        import shutil

        assert shutil.which("npm"), "npm is needed for this case"
    repo = tmp_path / "repo"
    (repo / ".claude").mkdir(parents=True)
    (repo / name).parent.mkdir(parents=True, exist_ok=True)
    (repo / name).write_text(content)
    (repo / name).chmod(0o755)
    (repo / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"allow": [rule]}}))
    record_trust(repo)
    first = _run(repo, tmp_path / "s1", command)
    assert not first.get("is_error") and "tested" in str(first["content"]), first  # reviewed: unasked
    marker = tmp_path / "outside" / "ran"
    marker.parent.mkdir()
    (repo / name).write_text(_pulled(name, marker))  # the teammate's commit, pulled
    second = _run(repo, tmp_path / "s2", command)
    assert not marker.exists(), f"{command!r} ran the pulled {name} under the committed {rule}"
    assert second.get("is_error"), second
    assert "shellrt trust add" in str(second["content"]), second
    record_trust(repo)  # reviewed again: covered again
    third = _run(repo, tmp_path / "s3", command)
    assert marker.exists() and not third.get("is_error"), third
