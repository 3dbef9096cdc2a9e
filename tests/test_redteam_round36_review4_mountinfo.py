"""Red team round 36 (review4): a hostile mount point name in /proc/self/mountinfo.

``mount_aliases`` (round 36 rules) split the mount table with ``str.splitlines``, which also breaks at
U+2028, U+0085, \\x1c-\\x1e, \\x0b, \\x0c (the kernel escapes only space, tab, newline, backslash), so a
mount point named ``<parent of the masked path>`` + U+2028 + anything (any user's FUSE mount on a
directory they may write) became a shorter, wrong mount point that claimed the masked path: its real
mount was not found and the bind-mount alias was left unmasked. And it read the table with
``read_text``: a mount point that is not UTF-8 raised ``UnicodeDecodeError`` out of ``derive_policy``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox._maskaliases import mount_aliases


@pytest.fixture
def tmp() -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="rt36-review4-mi-", dir="/var/tmp"))
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("sep", ["\u2028", "\u0085", "\x1c", "\x1e", "\x0b", "\x0c"])
def test_a_mount_point_with_a_line_separator_does_not_hide_an_alias(tmp: Path, sep: str) -> None:
    ws = tmp / "ws"
    ws.mkdir()
    (ws / "secret").write_text("s")
    (tmp / "alias").symlink_to(ws)  # stands in for a bind mount: the same file under another name
    table = "\n".join([
        f"30 1 8:1 / {ws} rw - ext4 /dev/sda1 rw",
        f"31 1 8:1 / {tmp}/alias rw - ext4 /dev/sda1 rw",
        f"32 1 0:99 / {ws}{sep}x rw - fuse.evil evil rw",
    ])  # fmt: skip
    assert mount_aliases([ws / "secret"], table) == [tmp / "alias" / "secret"]


def test_a_mount_point_that_is_not_utf8_does_not_stop_the_session(tmp: Path) -> None:
    if os.geteuid() != 0:
        pytest.fail("needs root (a mount in a private mount namespace)")
    point = os.fsencode(tmp) + b"/bad\xff name"
    os.mkdir(point)
    code = (
        "import os, subprocess; from pathlib import Path; from sandbox._maskaliases import mount_aliases; "
        f"subprocess.run(['mount', '-t', 'tmpfs', 'none', os.fsdecode({point!r})], check=True); "
        "print(mount_aliases([Path('/')]))"
    )
    out = subprocess.run(
        ["unshare", "-m", "--propagation", "private", sys.executable, "-c", code],
        capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": os.getcwd()},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
