"""Red team round 11 (rules in the sandbox): deny rules whose path the sandbox compiled differently
from the permission layer, or not at all.

- **Unicode spellings.** The permission layer matches a deny in NFC and NFD alike; the sandbox
  masked the rule's own bytes: ``Read(./café.key)`` (NFC) left the on-disk ``cafe`` + U+0301
  (NFD, as macOS tools write it) readable to ``cat``.
- **Brace sets.** ``Read(./keys/{id_rsa,id_ed25519})`` was taken for one literal path and masked
  nothing that exists.
- **A symlinked directory in a glob.** ``Read(**/*.pem)`` denies ``ws/link/x.pem`` to the file
  tools (the literal path matches); the walk never entered ``link``, so ``cat`` read the key.
- **Windows separators.** ``Read(.\\keys\\id_rsa)`` silently never matched: now a clear error.
- **A glob the sandbox cannot expand exactly** (too many matches) was masked in part with a
  diagnostic: now the session refuses to start, saying how to narrow the rule.

Failed before: the command printed the NFD, brace and symlinked keys; the Windows rule and the
cut glob raised nothing.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig
from sandbox.factory import create_backend
from shellrt.runtime.sandbox_policy import PolicyError, rule_masks
from tests._rt11_rules import deny, deny_policy, run_in
from tests.conftest import require

MODES = [pytest.param(False, id="per-command"), pytest.param(True, id="session")]
NFC = unicodedata.normalize("NFC", "café.key")
NFD = unicodedata.normalize("NFD", "café.key")


@pytest.fixture
def places() -> Iterator[tuple[Path, Path]]:
    base = Path(tempfile.mkdtemp(prefix="rt11-match-", dir="/var/tmp"))
    base.chmod(0o755)
    ws, outside = base / "ws", base / "outside"
    for d in (ws / "keys", ws / "uni", outside / "certs"):
        d.mkdir(parents=True)
    (ws / "uni" / NFD).write_text("rt11-nfd-secret\n")
    (ws / "keys" / "id_rsa").write_text("rt11-brace-secret-1\n")
    (ws / "keys" / "id_ed25519").write_text("rt11-brace-secret-2\n")
    (ws / "keys" / "public.txt").write_text("rt11-star-secret\n")
    (outside / "certs" / "x.pem").write_text("rt11-link-secret\n")
    (outside / "certs" / "readme").write_text("rt11-readable\n")
    os.symlink(outside / "certs", ws / "link")
    for p in [ws, outside, *ws.rglob("*"), *outside.rglob("*")]:
        if not p.is_symlink():
            p.chmod(0o777 if p.is_dir() else 0o666)
    try:
        yield ws, outside
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_each_form_masks_what_the_permission_layer_denies(places: tuple[Path, Path]) -> None:
    ws, outside = places
    masked = set(deny_policy(ws, f"Read(./uni/{NFC})").read_denied)
    assert ws / "uni" / NFD in masked
    masked = set(deny_policy(ws, "Read(./keys/{id_rsa,id_ed25519})").read_denied)
    assert {ws / "keys" / "id_rsa", ws / "keys" / "id_ed25519"} <= masked
    assert ws / "keys" / "public.txt" not in masked
    masked = set(deny_policy(ws, "Read(**/*.pem)").read_denied)
    assert outside / "certs" / "x.pem" in masked  # where the link leads: hidden under every name
    masked = set(deny_policy(ws, "Read(./keys/*)").read_denied)
    assert {ws / "keys" / "id_rsa", ws / "keys" / "public.txt"} <= masked
    masked = set(deny_policy(ws, f"Read(./uni/{NFC[:2]}*)").read_denied)  # a glob over the NFC spelling
    assert ws / "uni" / NFD in masked


@pytest.mark.parametrize("persistent", MODES)
def test_cat_cannot_read_through_any_of_the_forms(
    places: tuple[Path, Path], tmp_path: Path, persistent: bool
) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    ws, _ = places
    policy = deny_policy(ws, f"Read(./uni/{NFC})", "Read(./keys/{id_rsa,id_ed25519})", "Read(**/*.pem)")
    backend = create_backend(BwrapConfig(persistent=persistent), policy)
    out = anyio.run(run_in, backend, ws, tmp_path / "s", "cat uni/* keys/* link/* 2>&1; echo done")
    for secret in ("nfd", "brace-secret-1", "brace-secret-2", "link-secret"):
        assert f"rt11-{secret}" not in out, out
    assert "rt11-star-secret" in out and "rt11-readable" in out and out.rstrip().endswith("done"), out


@pytest.mark.parametrize(
    "rule", ["Read(.\\keys\\id_rsa)", "Edit(keys\\id_rsa)", "Read(C:/Users/x/.ssh)", "Read(C:\\x)"]
)
def test_windows_paths_are_a_clear_error(places: tuple[Path, Path], rule: str) -> None:
    ws, _ = places
    with pytest.raises(PolicyError) as caught:
        deny_policy(ws, rule)
    assert "Windows" in str(caught.value), caught.value


def test_glob_escapes_stay_valid(places: tuple[Path, Path]) -> None:
    ws, _ = places
    (ws / "keys" / "a*b").write_text("x")
    assert ws / "keys" / "a*b" in set(deny_policy(ws, "Read(./keys/a\\*b)").read_denied)


def test_a_glob_cut_short_refuses_the_session(places: tuple[Path, Path]) -> None:
    ws, _ = places
    with pytest.raises(PolicyError) as caught:
        rule_masks(deny("Read(./keys/*)", ws), home=ws, limit=2)
    assert "too many" in str(caught.value) and "Deny the directory" in str(caught.value)
