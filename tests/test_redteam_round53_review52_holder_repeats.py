"""Round 53 red team, review52: a holding mask is expanded once, however often it is named.

Round 52 (perms9) made a read deny that holds the workspace mask every entry beside the way to it
(`sandbox_policy._holder_masks`). Each naming of the holder listed its directories again and added
every entry again, each judged again as a mask (its realpath, the sandbox's own places, whether the
sandbox uid reaches it): a repository whose settings name the workspace's parent 50 times
(``"maskedPaths": [parent, parent, ...]``, or 50 spellings of one ``Read(...)`` rule) beside 200
entries had 10,000 masks judged, 6 s of the session's start; a few KB of settings and a busy parent
held every session of that workspace for minutes. Before round 52 each was one diagnostic.
Derivation only (no sandbox runs): the cost is the host's, the same for every backend.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sandbox import SandboxPolicy
from shellrt.permissions.rules import PermissionRule, RuleOrigin, parse_rule
from shellrt.permissions.settings import FileSettings
from shellrt.runtime import sandbox_policy
from shellrt.runtime.sandbox_policy import PolicyError, derive_policy

ENTRIES = 60
REPEATS = 40


@pytest.fixture
def outer() -> Iterator[Path]:
    """``outer/`` holds the workspace and ``ENTRIES`` files beside it."""
    base = Path(tempfile.mkdtemp(prefix="rt53-review52-rep-", dir="/var/tmp"))
    try:
        base.chmod(0o755)
        outer = base / "outer"
        (outer / "ws").mkdir(parents=True)
        for i in range(ENTRIES):
            (outer / f"e{i}").write_text("x\n")
        yield outer
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _counting(monkeypatch: pytest.MonkeyPatch, name: str) -> list[int]:
    """Count the calls of ``sandbox_policy.<name>`` (the real function still runs)."""
    calls = [0]
    real: Callable[..., Any] = getattr(sandbox_policy, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(sandbox_policy, name, counted)
    return calls


def _inputs(outer: Path, how: str) -> tuple[list[PermissionRule], list[FileSettings]]:
    ws = outer / "ws"
    if how == "setting":
        section = {"maskedPaths": [str(outer)] * REPEATS}
        return [], [FileSettings(path=ws / ".claude" / "settings.json", source="project", exists=True, sandbox=section)]
    origin = RuleOrigin("project", None, None, ws)
    # distinct texts, one place: ``x/../`` repeated (the rule list is not deduplicated by place)
    return [parse_rule(f"Read(/{outer}/{'x/../' * i}**)", "deny", origin) for i in range(REPEATS)], []


@pytest.mark.parametrize("how", ["setting", "rule"])
def test_a_repeated_holder_is_listed_and_judged_once(
    outer: Path, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed before: 40 listings and 2,400 masks judged (40 x 60 entries)."""
    listings = _counting(monkeypatch, "_around_roots")
    judged = _counting(monkeypatch, "_meets_sandbox")
    rules, files = _inputs(outer, how)
    policy, notes = derive_policy(
        SandboxPolicy(workspace=outer / "ws"), rules=rules, settings_files=files, mask_defaults=False,
        home=outer.parent / "home",
    )
    masked = set(map(Path, policy.read_denied))
    assert {outer / f"e{i}" for i in range(ENTRIES)} <= masked  # still every entry beside it
    assert outer / "ws" not in masked and outer not in masked
    assert listings[0] <= 1, listings
    assert judged[0] <= 2 * ENTRIES + REPEATS, judged
    assert any("cannot be masked" in n for n in notes), notes


def test_the_operators_holder_after_a_repositorys_still_refuses(
    outer: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The guard: a repository naming the holder first does not turn the operator's refusal (the
    holder too large to mask whole) into the repository's note."""
    monkeypatch.setattr(sandbox_policy, "MAX_GLOB_MATCHES", 5)
    ws = outer / "ws"
    theirs = parse_rule(f"Read(/{outer}/**)", "deny", RuleOrigin("project", None, None, ws))
    mine = parse_rule(f"Read(/{outer}/x/../**)", "deny", RuleOrigin("cli", None, None, ws))
    with pytest.raises(PolicyError, match="move the workspace out"):
        derive_policy(
            SandboxPolicy(workspace=ws), rules=[theirs, mine], mask_defaults=False, home=outer.parent / "home"
        )


def test_a_huge_holder_is_not_listed_whole(outer: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A directory on the way with more entries than the bound is refused once the bound is passed,
    not after listing it whole (the operator's refusal, a repository's note)."""
    monkeypatch.setattr(sandbox_policy, "MAX_GLOB_MATCHES", 5)
    seen = [0]
    real_scandir = os.scandir

    class Counted:
        def __init__(self, path: Any) -> None:
            self.it = real_scandir(path)

        def __enter__(self) -> Counted:
            return self

        def __exit__(self, *exc: object) -> None:
            self.it.close()

        def __iter__(self) -> Counted:
            return self

        def __next__(self) -> os.DirEntry[str]:
            seen[0] += 1
            return next(self.it)

    monkeypatch.setattr(sandbox_policy.os, "scandir", Counted)
    rule = parse_rule(f"Read(/{outer}/**)", "deny", RuleOrigin("project", None, None, outer / "ws"))
    _, notes = derive_policy(
        SandboxPolicy(workspace=outer / "ws"), rules=[rule], mask_defaults=False, home=outer.parent / "home"
    )
    assert any("move the workspace out" in n for n in notes), notes
    assert seen[0] <= 10, seen
