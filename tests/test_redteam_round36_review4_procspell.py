"""Red team round 36 (review4): per-process names reached through a symlink, and nested.

Round 36 rules refused ``Read(//dev/fd/3)`` and ``Read(//proc/self/cwd/.env)`` by their spelling, but
the compiler still resolved the mask with ``os.path.realpath`` in shellrt's own process: a symlink on
the way (``ws/fdlink -> /proc/self/fd``, the host's ``/proc/mounts``, ``/etc/mtab``, ``/proc/net``)
made ``Read(./fdlink/3)`` a mask of ``/proc/<shellrt pid>/fd/3`` again (a repository's way back into
the per-command fallback) and ``Read(./cwdlink/cwd/.env)`` a mask in shellrt's working directory.
``/proc/self/root/dev/fd/3`` (a per-process name below the own root) was silently a diagnostic.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox import SandboxPolicy
from shellrt.permissions.rules import RuleOrigin, parse_rule
from shellrt.runtime.sandbox_policy import PolicyError, derive_policy
from tests._rt11_rules import deny_policy

PLANTED = ["Read(./fdlink/3)", "Read(./selflink/cwd/.env)", "Read(./selflink/environ)"]
HOST = [
    "Read(//proc/mounts)",
    "Read(//etc/mtab)",
    "Read(//proc/net/tcp)",
    "Read(//proc/self/root/dev/fd/3)",
    "Read(//proc/self/root/proc/self/cwd/.env)",
]
RULES = PLANTED + HOST


@pytest.fixture
def ws() -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="rt36-review4-", dir="/var/tmp"))
    ws = base / "ws"
    ws.mkdir()
    (ws / "fdlink").symlink_to("/proc/self/fd")
    (ws / "selflink").symlink_to("/proc/self")
    try:
        yield ws
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _host_process(policy: SandboxPolicy) -> list[Path]:
    """Masks that name shellrt's own files: its /proc entry, or anything in its working directory."""
    return [
        p for p in policy.read_denied
        if str(p).startswith(f"/proc/{os.getpid()}") or p.parent == Path.cwd()
    ]  # fmt: skip


@pytest.mark.parametrize("rule", HOST)
def test_an_operator_rule_through_a_symlinked_per_process_name_refuses(ws: Path, rule: str) -> None:
    with pytest.raises(PolicyError, match="differs in every process"):
        policy = deny_policy(ws, rule)
        assert not _host_process(policy), policy.read_denied  # reached only when it did not refuse
        assert policy.read_denied, "nothing masked and no refusal"


@pytest.mark.parametrize("rule", PLANTED)
def test_an_operator_rule_through_a_link_a_command_planted_is_a_note_not_a_refusal(
    ws: Path, rule: str
) -> None:
    """The link is in the workspace: a repository must not stop the operator's session with it."""
    parsed = parse_rule(rule, "deny", RuleOrigin("cli", None, None, ws))
    policy, notes = derive_policy(SandboxPolicy(workspace=ws), rules=[parsed], mask_defaults=False)
    assert not _host_process(policy), policy.read_denied
    assert any("differs in every process" in n and "symlink inside a writable root" in n for n in notes), (
        notes
    )


@pytest.mark.parametrize("rule", RULES)
def test_a_repository_rule_through_a_symlinked_per_process_name_masks_nothing_of_shellrt(
    ws: Path, rule: str
) -> None:
    parsed = parse_rule(rule, "deny", RuleOrigin("project", None, None, ws))
    policy, notes = derive_policy(SandboxPolicy(workspace=ws), rules=[parsed], mask_defaults=False)
    assert policy.read_denied == (), policy.read_denied
    assert any("differs in every process" in n for n in notes), notes


def test_an_ordinary_symlinked_rule_still_masks_where_it_leads(ws: Path) -> None:
    (ws / "real").mkdir()
    (ws / "real" / "key").write_text("k")
    (ws / "link").symlink_to(ws / "real")
    assert deny_policy(ws, "Read(./link/key)").read_denied == (ws / "real" / "key",)
