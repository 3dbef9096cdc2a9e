"""Red team round 37 (rules): a read-denied file with another hard link outside the writable roots.

A mask hides a name. A link made inside a writable root is found and masked (rounds 8, 13: a
command could have made it); one outside the roots, made before the session (by the operator, a
package, a backup tool: the sandbox cannot make one there), was never looked for, and
``cat <outside>/copy.txt`` printed what ``Read(./secret.txt)`` hides, in every mode. The whole host
cannot be searched for it at every start, but the file's link count says whether names are
missing: an operator's rule whose file has links the search did not find now refuses the session,
naming the file and how to find them (a repository's rule, or a default mask: a diagnostic).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.factory import create_backend
from shellrt.permissions.rules import RuleOrigin, parse_rule
from shellrt.runtime.sandbox_policy import PolicyError, derive_policy
from tests._rt11_rules import deny_policy, run_in
from tests.conftest import require


@pytest.fixture
def linked() -> Iterator[tuple[Path, Path]]:
    """(workspace holding secret.txt, a hard link of it outside the workspace)."""
    base = Path(tempfile.mkdtemp(prefix="rt37-outsidelinks-", dir="/var/tmp"))
    base.chmod(0o755)
    ws, outside = base / "ws", base / "outside"
    ws.mkdir()
    outside.mkdir()
    ws.chmod(0o777)
    (ws / "secret.txt").write_text("TOPSECRET\n")
    (ws / "secret.txt").chmod(0o644)
    os.link(ws / "secret.txt", outside / "copy.txt")
    try:
        yield ws, outside / "copy.txt"
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_an_operator_rule_with_links_nowhere_found_refuses_the_session(linked: tuple[Path, Path]) -> None:
    ws, copy = linked
    with pytest.raises(PolicyError, match="hard link"):
        deny_policy(ws, "Read(./secret.txt)")


def test_a_link_inside_the_roots_is_found_and_the_session_starts(linked: tuple[Path, Path]) -> None:
    ws, copy = linked
    copy.unlink()
    os.link(ws / "secret.txt", ws / "notes.txt")  # the sandbox masks this one (AliasFinder)
    deny_policy(ws, "Read(./secret.txt)")


def test_two_rules_naming_both_links_start(linked: tuple[Path, Path]) -> None:
    ws, copy = linked
    policy = deny_policy(ws, "Read(./secret.txt)", f"Read(/{copy})")
    assert copy in policy.read_denied


def test_a_repository_rule_is_a_diagnostic(linked: tuple[Path, Path]) -> None:
    ws, _copy = linked
    rule = parse_rule("Read(./secret.txt)", "deny", RuleOrigin("project", ws / ".shellrt" / "settings.json", None, ws))
    _policy, notes = derive_policy(SandboxPolicy(workspace=ws), rules=[rule], mask_defaults=False)
    assert any("hard link" in n for n in notes), notes


@pytest.mark.parametrize("persistent", [False, True], ids=["per-command", "session"])
def test_no_command_reads_the_denied_file_at_its_outside_link(linked: tuple[Path, Path], persistent: bool) -> None:
    """What a session could still start with: a command reads nothing at the other name."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    ws, copy = linked
    try:
        policy = deny_policy(ws, "Read(./secret.txt)")
    except PolicyError:
        return  # refused: nothing runs
    out = anyio.run(
        run_in, create_backend(BwrapConfig(persistent=persistent), policy), ws, ws.parent / "s", f"cat {copy}; echo done"
    )
    assert "TOPSECRET" not in out, out


def test_a_file_below_an_operator_directory_rule_with_an_outside_link_refuses(linked: tuple[Path, Path]) -> None:
    """``Read(./keys/**)`` with ``keys/id`` linked outside the roots: counted too."""
    ws, copy = linked
    (ws / "keys").mkdir()
    os.link(copy, ws / "keys" / "id")
    (ws / "secret.txt").unlink()  # left: keys/id and the outside copy
    with pytest.raises(PolicyError, match="hard link"):
        deny_policy(ws, "Read(./keys/**)")
    os.link(ws / "keys" / "id", ws / "keys" / "id2")  # a second name below the mask still misses one
    with pytest.raises(PolicyError, match="hard link"):
        deny_policy(ws, "Read(./keys/**)")
    copy.unlink()  # both names below the mask: nothing outside
    deny_policy(ws, "Read(./keys/**)")


@pytest.mark.parametrize("persistent", [False, True], ids=["per-command", "session"])
def test_no_command_reads_a_denied_directory_file_at_its_outside_link(
    linked: tuple[Path, Path], persistent: bool
) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    ws, copy = linked
    (ws / "keys").mkdir()
    (ws / "secret.txt").rename(ws / "keys" / "id")
    try:
        policy = deny_policy(ws, "Read(./keys/**)")
    except PolicyError:
        return  # refused: nothing runs
    out = anyio.run(
        run_in, create_backend(BwrapConfig(persistent=persistent), policy), ws, ws.parent / "s", f"cat {copy}; echo done"
    )
    assert "TOPSECRET" not in out, out
