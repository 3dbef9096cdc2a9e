"""Red team, round 20 (files): a write over an immutable or append-only file says so.

Write and Edit replace a file by renaming a temp file over it; the kernel refuses that rename over
a file with ``chattr +i`` or ``+a``. The file and its directory were left as they were and the temp
file was removed (held), but the model was told only "Operation not permitted", which names no way
on. The refusal now names the attribute and what to do instead.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from sandbox import confine
from sandbox.confine import Mount, View
from tests.conftest import require


@pytest.mark.parametrize(
    ("attr", "says"), [("+i", "is immutable (chattr)"), ("+a", "is append-only (chattr)")]
)
def test_a_locked_file_is_refused_with_its_reason(tmp_path: Path, attr: str, says: str) -> None:
    if os.geteuid() != 0:
        pytest.skip("chattr +i/+a needs CAP_LINUX_IMMUTABLE (root)")
    require(shutil.which("chattr") is not None, "chattr (e2fsprogs) is not installed")
    f = tmp_path / "locked.txt"
    f.write_bytes(b"old\n")
    subprocess.run(["chattr", attr, str(f)], check=True)
    try:
        view = View([Mount("/", "/"), Mount(str(tmp_path), str(tmp_path), writable=True)])
        with pytest.raises(PermissionError) as raised:
            confine.write_file(view, str(f), b"new\n")
        assert says in str(raised.value) and "left as it was" in str(raised.value), raised.value
    finally:
        subprocess.run(["chattr", attr.replace("+", "-"), str(f)], check=True)
    assert f.read_bytes() == b"old\n"
    assert os.listdir(tmp_path) == ["locked.txt"], "a temp file was left behind"
