"""Red team round 7: a repository's glob deny rules held the host at session start.

Every ``Read(...)`` deny rule becomes a sandbox mask, a rule with a glob by walking the workspace
for its matches when the session starts (in ``Runtime.__init__``, on the caller's thread: in a
server or a batch, the event loop every other session runs on). Deny rules from the repository's
own, untrusted ``.claude/settings.json`` are obeyed (they only tighten), and each rule's walk was
bounded on its own (200,000 entries): 300 rules of a 6 KB settings file over 2,000 files took
37 s (~60 µs an entry), and the same file over a larger tree hours. The walks of rules from
files the workspace can write now share one budget; the operator's rules keep theirs, so the
repository cannot starve them either.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import shellrt
from tests._timing import cpu_seconds

pytestmark = pytest.mark.anyio


def _workspace(tmp_path: Path, rules: list[str]) -> Path:
    ws = tmp_path / "ws"
    (ws / ".claude").mkdir(parents=True)
    (ws / "d").mkdir()
    for i in range(2000):
        (ws / "d" / f"f{i}.txt").touch()
    (ws / "d" / "real.pem").write_text("SECRET\n")
    (ws / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"deny": rules}}))
    return ws


async def test_a_flood_of_repository_glob_rules_costs_the_start_little(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, [f"Read(**/x{i}*.pem)" for i in range(300)])
    # CPU, not wall (round 49): at load 10-17 the start took 9.4-12.5 s of wall (the 8 s bound this
    # had failed) for 3.0-3.6 s of CPU; 37 s before. 12 s sits ~3x from both.
    start = cpu_seconds()
    runtime = shellrt.Runtime(workspace=ws, sandbox="local", session_dir=tmp_path / "s")
    took = cpu_seconds() - start
    assert took < 12.0, took
    assert any("not masked in the sandbox" in d for d in runtime.diagnostics), runtime.diagnostics[:5]


async def test_the_operators_glob_rule_is_expanded_whatever_the_repository_adds(tmp_path: Path) -> None:
    """The repository's rules cannot use up what the operator's rule needs: `--deny`'s
    ``Read(**/*.pem)`` still masks ``d/real.pem`` behind 300 junk rules of the repository."""
    ws = _workspace(tmp_path, [f"Read(**/x{i}*.pem)" for i in range(300)])
    runtime = shellrt.Runtime(
        workspace=ws, sandbox="local", session_dir=tmp_path / "s", deny=["Read(**/*.pem)"]
    )
    assert ws / "d" / "real.pem" in runtime.policy.read_denied, runtime.policy.read_denied
