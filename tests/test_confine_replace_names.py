"""The atomic replace behind Write/Edit (`sandbox.confine.write_file`) and the names it can handle.

Red team round 14 (host side) found two left-overs in its temp file: the temp name took the
first 200 *characters* of the target's name, so a valid name of more than ~236 bytes of
non-ASCII text could not be written ("File name too long"), and in a directory with the
append-only attribute the temp file stayed behind when the rename was refused.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from sandbox.confine import Mount, View, write_file


def _view(ws: Path) -> View:
    return View([Mount("/", "/"), Mount(str(ws), str(ws), writable=True)], ())


@pytest.mark.parametrize("name", ["é" * 127, "日本" * 42, "a" * 255, "x" * 200 + "é" * 27])
def test_a_long_valid_name_is_written_and_replaced(tmp_path: Path, name: str) -> None:
    assert len(os.fsencode(name)) <= 255
    target = tmp_path / name
    assert write_file(_view(tmp_path), str(target), b"one\n").created
    assert not write_file(_view(tmp_path), str(target), b"two\n").created
    assert target.read_bytes() == b"two\n"
    assert sorted(os.listdir(tmp_path)) == [name]


def test_an_append_only_directory_is_refused_before_any_temp_file(tmp_path: Path) -> None:
    if shutil.which("chattr") is None or os.geteuid() != 0:
        pytest.fail("needs root and chattr (e2fsprogs) to set the append-only attribute")
    d = tmp_path / "log"
    d.mkdir()
    (d / "f").write_bytes(b"old\n")
    made = subprocess.run(["chattr", "+a", str(d)], capture_output=True, text=True, check=False)
    if made.returncode != 0:
        pytest.skip(f"this filesystem takes no append-only attribute: {made.stderr.strip()}")
    try:
        with pytest.raises(PermissionError, match="append-only"):
            write_file(_view(tmp_path), str(d / "f"), b"new\n")
        assert os.listdir(d) == ["f"] and (d / "f").read_bytes() == b"old\n"
    finally:
        subprocess.run(["chattr", "-a", str(d)], check=False)
