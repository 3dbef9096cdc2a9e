"""Red team round 9, docker: the identity helper was taken from wherever it was cached.

``priv`` runs as container root at every start and *is* the identity split: it makes the
executor's uid and capabilities and drops every command's. It is built once and cached under
``$XDG_CACHE_HOME/shellrt``, ``~/.cache/shellrt`` or, when neither can be written (a read-only or
missing home: services, CI containers), ``<tmp>/shellrt-cache-<uid>``: a name every local user
can predict (the file name is a hash of public source) and create first in a shared ``/tmp``.
An existing ``priv-<hash>`` there was used as is, whoever owned it or its directory: another
local user's program then ran as container root with the executor's capabilities in every
session (reading every command's input and output, forging exit codes, writing the bind-mounted
workspace as any uid). A cached helper is now used only from a directory chain that no one but
the caller (or root) can write, and only when the caller owns it and no one else can write it.

Runs as root (the victim) and plants as uid 65534 (the other local user).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

import pytest

from sandbox import _static_build, _zinit
from sandbox.docker import _priv
from tests.conftest import require

_NOBODY = 65534


@pytest.fixture
def unwritable_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home and cache the caller cannot write, a shared temp dir: the helper falls back to it."""
    require(os.geteuid() == 0, "the victim is root (another user plants as 65534)")
    home = tmp_path / "home"
    home.mkdir(mode=0o555)
    shared = tmp_path / "shared-tmp"
    shared.mkdir(mode=0o1777)
    shared.chmod(0o1777)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(home / "missing"))  # cannot be made: not even root (below)
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    monkeypatch.setattr(_static_build, "_built", {})
    (home / "missing").write_text("a file, not a directory: ~/.cache cannot be made under it")
    return shared


def _plant(directory: Path, name: str) -> Path:
    directory.mkdir(mode=0o777)
    directory.chmod(0o777)
    os.chown(directory, _NOBODY, _NOBODY)
    planted = directory / name
    planted.write_text("#!/bin/sh\necho planted by another user\n")
    planted.chmod(0o755)
    os.chown(planted, _NOBODY, _NOBODY)
    return planted


def test_a_helper_planted_in_the_shared_cache_is_never_used(unwritable_home: Path) -> None:
    digest = hashlib.sha256(_priv._source()).hexdigest()[:16]
    planted = _plant(unwritable_home / f"shellrt-cache-{os.getuid()}", f"priv-{digest}")
    used = _priv.priv_binary()  # the checked bytes (round 28: no path is read again)
    assert b"planted" not in used, f"the docker identity helper came from another user's file {planted}"
    assert used.startswith(b"\x7fELF")
    assert b"planted" in planted.read_bytes(), "another user's file was overwritten, not refused"


def test_a_planted_cache_directory_is_not_written_into(unwritable_home: Path) -> None:
    """Another user's (writable) directory of that name is not used to build in either: it could
    swap the helper between the build and the copy."""
    cache = unwritable_home / f"shellrt-cache-{os.getuid()}"
    _plant(cache, "decoy")
    assert _priv.priv_binary().startswith(b"\x7fELF")
    assert os.listdir(cache) == ["decoy"], f"built into another user's directory {cache}"


def test_the_bwrap_init_is_never_taken_from_a_planted_cache(
    unwritable_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bwrap session's C init (`sandbox._zinit`) first copied the cache code without these
    checks: a ``zinit-<digest>`` planted in the shared temp cache became every session's init, run
    with the zygote's privileges inside the sandbox. Both programs now share one cache."""
    monkeypatch.setattr(_zinit, "_program", None)
    monkeypatch.delenv(_zinit.INIT_ENV, raising=False)
    digest = hashlib.sha256(_zinit._source()).hexdigest()[:16]
    planted = _plant(unwritable_home / f"shellrt-cache-{os.getuid()}", f"zinit-{digest}")
    program = _zinit._program_or_reason()
    assert isinstance(program, bytes), program
    assert b"planted" not in program, f"the bwrap init came from another user's file {planted}"
