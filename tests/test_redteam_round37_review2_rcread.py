"""Red team round 37 (review2): a start-up file written to make the reader of what it sources slow.

Round 37 trust expands a start-up file's own variables and ``for`` loops to find what it sources
(`_protect_home._rc_sourced`, read by `linked_places` at each guard's start and at most once a
second for the file tools). A command writes such a file (a dotfiles repository that is the
workspace: a file ``~/.bashrc`` sources; or the home itself). Before:
- ``A=$A$A`` forty times doubled a value to 2^40 characters: the host process out of memory;
  twenty times (4 MiB) and the reader ran past 100 s (``realpath`` of a 2-million-component path);
- one literal ``. /x/x/x…`` of 512 KiB: ``realpath`` is quadratic in the components (~40 s);
- 2,000 loops of 100 words: every word split by ``shlex`` and expanded, 0.5-2.8 s a read;
- 256 sourced words of 4,000 characters of ``/x`` cost 17 ms of ``realpath`` each (~4 s a read).
Each case also names a real file first and last: both must still be guarded.
The reader runs in a child limited to 1 GiB of address space and 60 s.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from shellrt.supervisor._protect_home import _GLOB_READ_ENTRIES

_CHILD = textwrap.dedent(
    """
    import json, os, resource, sys, time
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
    from shellrt.supervisor._protect_home import _rc_sourced
    # Directory entries looked at (every walk goes through os.scandir, glob's too): a count, which
    # no load stretches (round 49).
    entries = [0]
    real_scandir = os.scandir
    class Counted:
        def __init__(self, it):
            self.it = it
        def __enter__(self):
            return self
        def __exit__(self, *exc):
            self.it.close()
        def __iter__(self):
            return self
        def __next__(self):
            entry = next(self.it)
            entries[0] += 1
            return entry
        def close(self):
            self.it.close()
    os.scandir = lambda *args, **kwargs: Counted(real_scandir(*args, **kwargs))
    start, cpu = time.monotonic(), time.process_time()
    found = _rc_sourced(sys.argv[1])
    print(json.dumps({"seconds": time.monotonic() - start, "cpu": time.process_time() - cpu,
                      "entries": entries[0], "found": [real for real, _ in found]}))
    """
)

_LONG = "/x" * 2_000  # a 4,000-character path: within PATH_MAX, 2,000 components


def _doubling() -> str:
    return "A=/x\n" + "A=$A$A\n" * 40 + '. "$A/s.sh"\n'


def _literal() -> str:
    return ". /" + "x/" * (1 << 18) + "s.sh\n"


def _loops() -> str:
    words = " ".join(["$A"] * 100)
    return f"A={_LONG}\n" + "".join(f"for a{i} in {words}; do :; done\n" for i in range(2_000))


def _many() -> str:
    return "".join(f". {_LONG}/s{i}.sh\n" for i in range(256))


@pytest.mark.parametrize("how", ["doubling", "literal", "loops", "many"])
def test_a_crafted_startup_file_is_read_quickly(tmp_path: Path, how: str) -> None:
    home = tmp_path / "home"
    dotfiles = tmp_path / "dotfiles"
    home.mkdir()
    dotfiles.mkdir()
    (dotfiles / "first.sh").write_text("true\n")
    (dotfiles / "last.sh").write_text("true\n")
    (dotfiles / "crafted.sh").write_text({"doubling": _doubling, "literal": _literal, "loops": _loops, "many": _many}[how]())
    # The operator's: names a file of the dotfiles repository (the workspace), which the command rewrote.
    (home / ".bashrc").write_text(
        f". {dotfiles}/first.sh\n. {dotfiles}/crafted.sh\n. {dotfiles}/last.sh\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    try:
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, str(home)], capture_output=True, text=True, timeout=60, env=env
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{how}: reading the start-up files ran past 60 s")
    assert done.returncode == 0, f"{how}: {done.stderr[-2000:]}"
    result = json.loads(done.stdout)
    # CPU, not wall (round 49): at load 8 the wall was 1.3-2.7 s for 0.02-0.4 s of CPU. The bound is the
    # wall bound it had, idle (CPU = wall for this one thread): it catches what that caught.
    assert result["cpu"] < 1.5, f"{how}: {result['cpu']:.1f} s of CPU ({result['seconds']:.1f} s)"
    found = set(result["found"])
    for name in ("first.sh", "crafted.sh", "last.sh"):
        assert str(dotfiles / name) in found, name


def test_many_patterns_walk_a_bounded_number_of_entries(tmp_path: Path) -> None:
    """300 patterns over a directory of 5,000 names: each walked its own 4,096 entries (1.2 million
    a read, 1.4-1.9 s before); now the patterns of one read look at 16,384 in all."""
    home = tmp_path / "home"
    dotfiles = tmp_path / "dotfiles"
    spread = dotfiles / "spread"
    home.mkdir()
    spread.mkdir(parents=True)
    for i in range(5_000):
        (spread / f"f{i}").touch()
    (dotfiles / "first.sh").write_text("true\n")
    (dotfiles / "crafted.sh").write_text("".join(f". {spread}/q{i}*.sh\n" for i in range(300)))
    (home / ".bashrc").write_text(f". {dotfiles}/first.sh\n. {dotfiles}/crafted.sh\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(home)], capture_output=True, text=True, timeout=60, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    # The count (round 49): 16,637 entries (the read's 16,384 and the rest of the home); 1.2 million before.
    assert result["entries"] <= 2 * _GLOB_READ_ENTRIES, result["entries"]
    assert result["cpu"] < 0.8, f"{result['cpu']:.2f} s of CPU ({result['seconds']:.2f} s)"  # 0.24 s (round 49)
    assert str(dotfiles / "first.sh") in result["found"] and str(spread) in result["found"]
