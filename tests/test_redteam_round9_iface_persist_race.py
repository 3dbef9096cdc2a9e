"""Red team round 9 (interfaces): "allow always in this project" checked for a link, then wrote by path.

`save_allow_rules` refused a ``.shellrt`` that was a symbolic link, then read, created its
temporary file and renamed it into place by path, resolving ``.shellrt`` again at each step. A
background command swapping ``.shellrt`` with a link (``renameat2(RENAME_EXCHANGE)`` in a loop)
between the check and the write got the operator's answer written as ``settings.local.json`` in
a directory of its choosing (here a sibling standing for another project's ``.shellrt``, or a
user's). Now the directory is opened once, without following a link, and every step works
through that descriptor. A real racing process; the swap loop runs without the GIL.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from shellrt.permissions.errors import SettingsWriteError
from shellrt.permissions.persist import UNCHECKED, save_allow_rules

_SWAPPER = r"""
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
a, b, seconds = sys.argv[1].encode(), sys.argv[2].encode(), float(sys.argv[3])
end = time.monotonic() + seconds
print("ready", flush=True)
while time.monotonic() < end:
    for _ in range(1000):
        libc.renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE)
"""

ATTEMPTS = 3000


def test_a_directory_swapped_for_a_link_mid_save_never_receives_the_answer(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / ".shellrt").mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"  # another project's .shellrt, or the user's own
    elsewhere.mkdir()
    (ws / "link").symlink_to(elsewhere)
    swapper = subprocess.Popen(
        [sys.executable, "-c", _SWAPPER, str(ws / ".shellrt"), str(ws / "link"), "60"],
        stdout=subprocess.PIPE,
        text=True,
    )
    saved = refused = 0
    try:
        assert swapper.stdout is not None and swapper.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 40
        for _ in range(ATTEMPTS):
            try:
                save_allow_rules(
                    ws / ".shellrt" / "settings.local.json", ["Bash(npm test:*)"], expected_digest=UNCHECKED
                )
                saved += 1
            except SettingsWriteError:
                refused += 1
            if list(elsewhere.iterdir()) or time.monotonic() > deadline:
                break
    finally:
        swapper.kill()
        swapper.wait()
    assert list(elsewhere.iterdir()) == [], f"written through the link ({saved} saved, {refused} refused)"
    assert saved > 0, "the race left no attempt to save at all"


def test_held_a_plain_save_and_a_link_are_as_before(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    path = ws / ".shellrt" / "settings.local.json"
    digest = save_allow_rules(path, ["Bash(npm test:*)"], expected_digest=None)
    assert '"Bash(npm test:*)"' in path.read_text()
    save_allow_rules(path, ["Read(./docs/**)"], expected_digest=digest)
    assert "Read(./docs/**)" in path.read_text() and "Bash(npm test:*)" in path.read_text()
    assert path.stat().st_mode & 0o077 == 0
    other = tmp_path / "ws2"
    other.mkdir()
    (other / ".shellrt").symlink_to(tmp_path / "elsewhere2", target_is_directory=True)
    (tmp_path / "elsewhere2").mkdir()
    with pytest.raises(SettingsWriteError, match="symbolic link"):
        save_allow_rules(other / ".shellrt" / "settings.local.json", ["Bash(x)"])
    (other / ".shellrt").unlink()
    (other / ".shellrt").mkdir()
    (other / ".shellrt" / "settings.local.json").symlink_to(tmp_path / "target.json")
    with pytest.raises(SettingsWriteError, match="symbolic link"):
        save_allow_rules(other / ".shellrt" / "settings.local.json", ["Bash(x)"])
    assert not (tmp_path / "target.json").exists()
