"""Red team, round 56 (rules): a glob rule below a directory named in the other Unicode normal form.

The permission layer matches a deny in NFC and NFD alike, and the mask compile found every spelling
of a *static* rule (round 45, `_spellings`) and matched a glob's entries in both forms -- but walked
a glob from its static directory as the rule spells it only. ``Read(./café/*)`` typed in NFC (as
keyboards do) over a ``cafe`` + U+0301 directory (NFD: what macOS writes, and a repository made there
ships) masked nothing, silently: a script read ``café/key`` that the Read tool was denied.
``Edit(./café/*)`` left ``café/app.ini`` writable the same way. Now the walk starts from every
spelling of the static directory.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import shellrt
from sandbox import SandboxPolicy
from shellrt.permissions.rules import RuleOrigin, parse_rule
from shellrt.runtime.sandbox_policy import derive_policy
from tests._calls import block_text, one_call
from tests.conftest import require

NFC, NFD = "caf\u00e9", "cafe\u0301"


@pytest.fixture
def ws() -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="shellrt-r56-rules-nfd-", dir="/var/tmp"))  # bwrap's /tmp is private
    try:
        base.chmod(0o755)
        ws = base / "ws"
        (ws / NFD / "sub").mkdir(parents=True)
        (ws / NFD / "key").write_text("SECRET56-NFD\n")
        (ws / NFD / "sub" / "deep").write_text("SECRET56-DEEP\n")
        for d in (ws, ws / NFD, ws / NFD / "sub"):
            d.chmod(0o777)
        for f in (ws / NFD / "key", ws / NFD / "sub" / "deep"):
            f.chmod(0o666)
        yield ws
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _compiled(ws: Path, text: str, source: str) -> set[Path]:
    rule = parse_rule(text, "deny", RuleOrigin(source, None, None, ws))
    policy, _ = derive_policy(SandboxPolicy(workspace=ws), rules=[rule], mask_defaults=False, home=ws.parent / "h")
    return {Path(p) for p in (*policy.read_denied, *policy.write_denied)}


def _covered(path: Path, masks: set[Path]) -> bool:
    return any(m == path or m in path.parents for m in masks)


@pytest.mark.parametrize("source", ["cli", "project"])
@pytest.mark.parametrize(
    ("text", "target"),
    [
        (f"Read(./{NFC}/*)", "key"),
        (f"Read(./{NFC}/k?y)", "key"),
        (f"Read(./{NFC}/**/deep)", "sub/deep"),
        (f"Edit(./{NFC}/*)", "key"),
        (f"Write({NFC}/sub/*)", "sub/deep"),
    ],
)
def test_a_glob_below_the_other_spelling_is_compiled(ws: Path, text: str, target: str, source: str) -> None:
    """Failed 10 of 10 before: nothing masked or bound, no diagnostic."""
    rule = parse_rule(text, "deny", RuleOrigin(source, None, None, ws))
    path = ws / NFD / target
    assert rule.match_item(str(path), home=ws.parent / "h", resolve=False)  # the permission layer denies it
    assert _covered(path, _compiled(ws, text, source))


@pytest.mark.anyio
async def test_a_script_reads_nothing_the_rule_names(ws: Path) -> None:
    """Failed 1 of 1 before: ``sh /tmp/r.sh`` printed the secret (bypassPermissions, bwrap session)."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    session = Path(tempfile.mkdtemp(prefix="shellrt-r56-rules-nfds-", dir="/var/tmp"))
    script = f"cat ./{NFD}/key; echo ran-$?\\n"
    try:
        async with shellrt.Runtime(
            workspace=ws, sandbox="bwrap", mode="bypassPermissions", session_dir=session, settings_files=(),
            deny=[f"Read(./{NFC}/*)"],
        ) as rt:
            result = await one_call(rt, "Bash", command=f"printf '{script}' > /tmp/r.sh && sh /tmp/r.sh")
    finally:
        shutil.rmtree(session, ignore_errors=True)
    text = block_text(result)
    assert "ran-" in text and "SECRET56" not in text, result


@pytest.mark.parametrize("how", ["user", "project", "parameter"])
def test_a_masked_path_in_the_other_spelling_is_masked(ws: Path, how: str) -> None:
    """Failed 3 of 3 before: ``"maskedPaths": [".../café"]`` (NFC, as typed) over the on-disk NFD
    directory masked only the name as written, which does not exist; the directory stayed readable."""
    from shellrt.permissions.settings import FileSettings

    outside = ws.parent / "outside"
    (outside / NFD).mkdir(parents=True)
    (outside / NFD / "k").write_text("SECRET56\n")
    named = str(outside / NFC)
    if how == "parameter":
        policy, _ = derive_policy(SandboxPolicy(workspace=ws), masked_paths=[named], mask_defaults=False, home=ws.parent / "h")
    else:
        where = ws.parent / "user.json" if how == "user" else ws / ".claude" / "settings.json"
        loaded = FileSettings(path=where, source=how, exists=True, sandbox={"maskedPaths": [named]})
        policy, _ = derive_policy(SandboxPolicy(workspace=ws), settings_files=[loaded], mask_defaults=False,
                                  home=ws.parent / "h")  # fmt: skip
    assert _covered(outside / NFD / "k", {Path(p) for p in policy.read_denied}), policy.read_denied
