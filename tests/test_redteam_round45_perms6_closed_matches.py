"""Red team, round 45 (perms6): an operator's glob matches in a place closed to the sandbox uid.

Round 42 left unmounted an operator's glob match the sandbox uid cannot reach (a mask is a mount,
and a command reads the mount table), but only a file with one name. Two more ways, as a root
caller (commands as the leased uid):

- a matched directory, or a file with other hard links, stayed a mount whose name
  ``/proc/self/mountinfo`` showed (rounds 42/43's Left). Now neither is mounted; the directory's
  files and the file's names are still counted by round 37's hard-link check (a link left
  elsewhere still refuses the session).
- judged by its own path alone, a closed match skipped its mask even when another mount of its
  file system shows it at an open place (``mount --bind /srv/closed/sub /srv/open/alias``): a mask's
  other names are only looked for from a mask, so ``cat /srv/open/alias/k.pem`` read what
  ``Read(//srv/closed/**/k.pem)`` denies (before round 42, masked there). Now a match with such a
  reachable name is masked, and its other names with it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import shellrt
from sandbox import SandboxPolicy
from shellrt.permissions.rules import RuleOrigin, parse_rule
from shellrt.runtime.sandbox_policy import PolicyError, derive_policy
from tests._calls import block_text, one_call
from tests.conftest import require


@pytest.fixture
def top() -> Iterator[Path]:
    require(os.geteuid() == 0, "a root caller's host judges what its sandbox uid can reach")
    base = Path(tempfile.mkdtemp(prefix="rt45-perms6-closed-", dir="/var/tmp"))
    bound = False
    try:
        base.chmod(0o755)
        (base / "ws").mkdir(mode=0o777)
        closed = base / "closed"
        (closed / "hidden-dir-45").mkdir(parents=True)
        (closed / "hidden-dir-45" / "f").write_text("SECRET45-DIR\n")
        (closed / "hl-a.pem").write_text("SECRET45-LINK\n")
        os.link(closed / "hl-a.pem", closed / "hl-b.pem")
        (closed / "sub").mkdir(mode=0o755)
        (closed / "sub" / "k.pem").write_text("SECRET45-ALIAS\n")
        (closed / "sub" / "k.pem").chmod(0o644)
        closed.chmod(0o700)
        (base / "open" / "alias").mkdir(parents=True)
        done = subprocess.run(["mount", "--bind", str(closed / "sub"), str(base / "open" / "alias")], check=False)
        require(done.returncode == 0, "mount --bind failed here")
        bound = True
        (base / "ws" / "r.sh").write_text(f"grep -c 'hidden-dir-45\\|hl-' /proc/self/mountinfo; cat {base}/open/alias/k.pem\n")
        yield base
    finally:
        if bound:
            subprocess.run(["umount", "-l", str(base / "open" / "alias")], check=False)
        shutil.rmtree(base, ignore_errors=True)


def _derive(top: Path, *rules: str) -> tuple[set[Path], list[str]]:
    ws = top / "ws"
    parsed = [parse_rule(r.format(top=str(top).lstrip("/")), "deny", RuleOrigin("cli", None, None, ws)) for r in rules]
    policy, notes = derive_policy(SandboxPolicy(workspace=ws), rules=parsed, mask_defaults=False)
    return set(policy.read_denied), notes


def test_a_closed_directory_match_is_not_mounted(top: Path) -> None:
    masked, notes = _derive(top, "Read(//{top}/closed/*-dir-45)")
    assert not any("hidden-dir-45" in str(p) for p in masked), (masked, notes)


def test_a_closed_file_with_every_name_matched_is_not_mounted(top: Path) -> None:
    masked, notes = _derive(top, "Read(//{top}/closed/hl-*.pem)")
    assert not any("hl-" in str(p) for p in masked), (masked, notes)


def test_a_closed_file_with_a_name_left_still_refuses(top: Path) -> None:
    """The control: round 37's check still counts the names of what is left unmounted."""
    with pytest.raises(PolicyError, match="hard links"):
        _derive(top, "Read(//{top}/closed/hl-a.*)")


def test_a_closed_match_another_mount_shows_is_masked(top: Path) -> None:
    masked, notes = _derive(top, "Read(//{top}/closed/**/k.pem)")
    assert top / "open" / "alias" / "k.pem" in masked, (masked, notes)


@pytest.mark.anyio
async def test_cat_reads_nothing_and_the_mount_table_names_nothing(top: Path) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    session = Path(tempfile.mkdtemp(prefix="rt45-perms6-cs-", dir="/tmp"))
    name = str(top).lstrip("/")
    try:
        async with shellrt.Runtime(
            workspace=top / "ws",
            sandbox="bwrap",
            mode="bypassPermissions",
            session_dir=session,
            settings_files=(),
            deny=[f"Read(//{name}/closed/*-dir-45)", f"Read(//{name}/closed/hl-*.pem)", f"Read(//{name}/closed/**/k.pem)"],
        ) as rt:
            result = await one_call(rt, "Bash", command="sh r.sh; echo ran")
    finally:
        shutil.rmtree(session, ignore_errors=True)
    text = block_text(result)
    assert "ran" in text and "SECRET45" not in text, result
    assert text.splitlines()[0].strip() == "0", result
