"""Red team round 7 (interfaces): a command rule's ``*`` must not let a command stall the host.

``Bash(a * a * a * b)`` was matched as the backtracking regex ``a\\ .*\\ a\\ .*\\ a\\ .*\\ b``: a
command the model writes (it can read the rules in the workspace's settings) of many ``a`` and no
``b`` made one check cubic in its length (each further ``*`` one power more): 1,600 characters took
seconds, the 10,000 the analysis accepts about an hour — inside the event loop, where every session
of a ``serve`` process and every command's timeout stopped meanwhile. Matching is now a
left-to-right search of the literal pieces (linear). Real processes; the local backend.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import shellrt
from shellrt.permissions import parse_rule
from shellrt.protocol import ToolUseBlock
from tests._governance import isolated_workspace
from tests._timing import cpu_seconds

pytestmark = pytest.mark.anyio

_ids = itertools.count()

#: CPU seconds one decision may take (the attack took minutes before the fix). Round 49: CPU, not
#: wall -- at load ~17 one decision took 5.4 s of wall and failed the 5 s this was on the wall clock;
#: a decision costs 0.9-1.1 s of CPU at load 16, so 10 s.
BUDGET_S = 10.0


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    ws = isolated_workspace(tmp_path, monkeypatch)
    return ws


@pytest.mark.parametrize(
    ("rule", "command"),
    [
        ("Bash(docker run * -v * -v * --privileged)", "docker run" + " -v x" * 1_500),
        ("Bash(a * a * a * b)", "a" + " a" * 2_500),
    ],
)
async def test_a_wildcard_rule_decides_a_long_command_at_once(ws: Path, rule: str, command: str) -> None:
    async with shellrt.Runtime(ws, "local", session_dir=ws.parent / f"s{next(_ids)}", deny=[rule]) as rt:
        started = cpu_seconds()  # the decision is this process's work: nothing runs (no one to ask)
        (envelope,) = await rt.run_envelopes(
            [ToolUseBlock(id=f"r7w{next(_ids)}", name="Bash", input={"command": command})]
        )
        elapsed = cpu_seconds() - started
    assert envelope.is_error  # not denied by the rule (it does not match), asked, and no one to ask
    assert "was not granted" in str(envelope.model.content) and elapsed < BUDGET_S, (elapsed, envelope.model)


def _matches(rule: str, command: str) -> bool:
    return parse_rule(rule, "deny").match_item(command, home=Path.home(), resolve=False)


def test_wildcards_still_match_as_documented() -> None:
    assert _matches("Bash(npm run *)", "npm run build")
    assert not _matches("Bash(npm run *)", "npm runx")
    assert _matches("Bash(docker run * -v *=* img)", "docker run -it -v a=b img")
    assert not _matches("Bash(docker run * -v *=* img)", "docker run -it -v ab img")
    assert _matches("Bash(a*a)", "aa") and _matches("Bash(a*a)", "aba") and not _matches("Bash(a*a)", "a")
    assert _matches("Bash(*.sh x)", "run.sh x") and not _matches("Bash(*.sh x)", "run.sh y")
    assert _matches("Bash(git * push * main)", "git -C . push origin main")
    assert not _matches("Bash(git * push * main)", "git push origin main")  # needs a word before push
    assert _matches("Bash(x ** y)", "x 1 y") and _matches("Bash(a * * b)", "a 1 2 b")


def test_a_star_inside_a_prefix_rule_is_a_wildcard_too() -> None:
    # It was a literal '*': the deny rule Bash(git * push:*) matched no command at all.
    assert _matches("Bash(git * push:*)", "git -C . push origin main")
    assert _matches("Bash(git * push:*)", "git --no-pager push")
    assert not _matches("Bash(git * push:*)", "git -C . pushx")
    assert _matches("Bash(git diff:*)", "git diff") and not _matches("Bash(git diff:*)", "git diff-tree")
