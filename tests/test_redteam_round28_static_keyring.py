"""Red team, round 28 (static): a command planted the static program a later shellrt process ran.

`sandbox._static_build` caches the bwrap session's init (``zinit``) and the docker identity switch
(``priv``) in the first of ``$XDG_CACHE_HOME/shellrt``, ``~/.cache/shellrt``,
``<tmp>/shellrt-cache-<uid>``, and trusted a cached file its caller owned and no one else could
write. A sandboxed command whose writable root has no such cache yet makes one: its files are the
caller's on the host, so a later process whose ``HOME`` is that root ran the command's program as
its zygote's init. A cached program is now used only when its HMAC under the uid's keyring secret
(`sandbox._keyring`) matches, and the sandboxes refuse the keyring to commands.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from sandbox import _keyring, _seccomp, _static_build, _zinit
from tests import _nonroot
from tests._bwrap_session import probe_lines, require_bwrap
from tests.conftest import require

pytestmark = pytest.mark.bwrap

ROOT = Path(__file__).resolve().parents[1]
PLANTED = b"#!/bin/sh\necho planted by a command\n"
#: A child shellrt process: which init would its zygote run?
_CHILD = (
    "from sandbox import _zinit\n"
    "p = _zinit._program_or_reason()\n"
    "print('KIND', 'planted' if isinstance(p, bytes) and b'planted by a command' in p"
    " else 'elf' if isinstance(p, bytes) and p[:4] == b'\\x7fELF' else 'none: ' + str(p)[:300])\n"
)


def _child(home: Path, **env: str) -> str:
    base = {k: v for k, v in os.environ.items() if k not in ("XDG_CACHE_HOME", "CC", _zinit.INIT_ENV)}
    run = subprocess.run(
        [sys.executable, "-c", _CHILD],
        env={**base, "HOME": str(home), "TMPDIR": str(home / "tmp"), "PYTHONPATH": str(ROOT), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout.strip().rpartition("KIND ")[2]


def test_a_program_a_command_planted_in_a_later_processs_cache_is_not_run(tmp_path: Path) -> None:
    """Failed before (root 1 of 1, uid 65534 1 of 1): the child ran ``planted``. Now it rebuilds
    over it; a second child uses that cache without a compiler; program bytes swapped under a
    genuine MAC are refused again."""
    home = tmp_path / "home"  # as the writable root of a sandbox: the command made its cache
    cache = home / ".cache" / "shellrt"
    cache.mkdir(parents=True, mode=0o700)
    (home / "tmp").mkdir(mode=0o700)
    dest = cache / f"zinit-{hashlib.sha256(_zinit._source()).hexdigest()[:16]}"  # public source: its name
    dest.write_bytes(PLANTED)
    dest.chmod(0o755)
    dest.with_name(dest.name + ".mac").write_bytes(b"0" * 64)  # a command can write any MAC file
    assert _child(home) == "elf"
    assert dest.read_bytes()[:4] == b"\x7fELF", "the planted program was left in the cache"
    # Warm: the genuine cache is used as is (no compiler is found, so nothing was built).
    assert _child(home, CC="/nonexistent/cc") == "elf"
    dest.write_bytes(PLANTED)  # the program swapped, its (genuine) MAC kept
    assert _child(home) == "elf"
    mac = dest.with_name(dest.name + ".mac")
    (home / "genuine.mac").write_bytes(mac.read_bytes())
    dest.write_bytes(PLANTED)  # and again, its MAC a link to a genuine one (not followed)
    mac.unlink()
    mac.symlink_to(home / "genuine.mac")
    assert _child(home) == "elf"
    assert not mac.is_symlink() and dest.read_bytes()[:4] == b"\x7fELF"


def _numbers() -> tuple[int | None, int | None]:
    arch = _seccomp.MACHINES[platform.machine()]
    return _seccomp.DENIED["add_key"][arch], _seccomp.DENIED["keyctl"][arch]


def test_without_a_key_nothing_cached_is_trusted_or_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """No keyring (shellrt under docker's default seccomp profile, say): a cached program cannot be
    checked, so each process builds its own and caches nothing; it says so once."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setattr(_keyring, "_found", "the user keyring cannot be used (Operation not permitted)")
    monkeypatch.setattr(_static_build, "_built", {})
    monkeypatch.setattr(_static_build, "_said_no_key", [])
    srcs = [b"int main(void) { return 0; }\n", b"int main(void) { return 1; }\n"]
    cache = home / ".cache" / "shellrt"
    cache.mkdir(parents=True, mode=0o700)
    (cache / _static_build.cache_name("probe", srcs[0])).write_bytes(PLANTED)
    with caplog.at_level(logging.WARNING, logger=_static_build.__name__):
        programs = [_static_build.static_program("probe", src) for src in srcs]
    assert all(p[:4] == b"\x7fELF" for p in programs) and programs[0] != programs[1]
    assert b"planted" not in programs[0]
    assert os.listdir(cache) == [_static_build.cache_name("probe", srcs[0])], "something was cached"
    assert not list(tmp_path.glob("shellrt-*")), "a build directory was left"
    said = [r for r in caplog.records if "not cached" in r.getMessage()]
    assert len(said) == 1, caplog.text


def test_the_keyring_is_refused_to_a_bwrap_command(tmp_path: Path) -> None:
    """Held before: the key would be a command's to forge MACs with, were keyctl allowed. Bwrap's
    filter refuses ``keyctl`` and ``add_key`` (EPERM), while the caller's key exists."""
    require_bwrap()
    assert isinstance(_keyring.secret(), bytes), _keyring.secret()
    ws = tmp_path / "ws"
    ws.mkdir(mode=0o755)
    probe = (
        "import ctypes, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        f"add, kc = {_numbers()}\n"
        f"d = {_keyring.DESCRIPTION!r}\n"
        "r = libc.syscall(kc, ctypes.c_long(10), ctypes.c_long(-4), b'user', d, ctypes.c_long(0))\n"
        "print('SEARCH', r, ctypes.get_errno())\n"
        "r = libc.syscall(add, b'user', d, b'x' * 32, ctypes.c_size_t(32), ctypes.c_long(-4))\n"
        "print('ADD', r, ctypes.get_errno())\n"
    )
    fields, out = probe_lines(ws, tmp_path / "s", probe, persistent=False)
    assert fields.get("SEARCH") == f"-1 {errno.EPERM}" and fields.get("ADD") == f"-1 {errno.EPERM}", out


def test_it_holds_for_an_unprivileged_caller() -> None:
    """The tests above as uid 65534 (its files, its own user keyring)."""
    require(
        os.geteuid() == 0, "preparing a run as uid 65534 needs root (as non-root, run this file directly)"
    )
    require(shutil.which("setpriv") is not None, "setpriv (util-linux)")
    names = [
        "test_a_program_a_command_planted_in_a_later_processs_cache_is_not_run",
        "test_without_a_key_nothing_cached_is_trusted_or_written",
        "test_the_keyring_is_refused_to_a_bwrap_command",
    ]
    collected, outcome = _nonroot.run_as_nobody(
        [f"tests/{Path(__file__).name}::{n}" for n in names], collect_args=[f"{__file__}::{n}" for n in names]
    )
    _nonroot.assert_all_held(collected, outcome)
