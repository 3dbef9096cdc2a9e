"""Red team round 36 (review2): files the operator's home obeys, written to stall their reader.

Round 36 (trust) guards the files ``~/.bashrc`` sources and those ``~/.ssh/config`` includes; with
a dotfiles repository as the workspace a command writes them. `linked_places` reads them all again
(every guard, and the file tools' judgement of a write once a second). Its ``source`` pattern let
``\\s*`` run from every line start over all the newlines after it: 1 MB of blank lines in a sourced
file took over an hour. ssh's ``Include /*/*/*/*/*/*/*`` in an included file globbed the whole host
(58 s a read here).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from shellrt.supervisor import _protect_home


def _linked_places(home: Path, timeout: float) -> str:
    root = str(Path(__file__).resolve().parents[1])
    code = (
        "from shellrt.supervisor._protect_home import linked_places\n"
        "found = linked_places()\nprint(sorted(found.items()))\n"
    )
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": "", "PYTHONPATH": root}
    try:
        done = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        raise AssertionError(f"reading the home's obeyed files took over {timeout} s") from None
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_sourced_file_of_blank_lines_is_read_in_linear_time(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    sourced = tmp_path / "dotfiles" / "aliases.sh"
    sourced.parent.mkdir()
    nested = tmp_path / "dotfiles" / "more.sh"
    (home / ".bashrc").write_text(f". {sourced}\n")
    sourced.write_text(f"source {nested}\n" + "\n" * 1_000_000 + "x\n")  # the read bound: 1 MB
    out = _linked_places(home, timeout=20)
    assert str(sourced) in out and str(nested) in out, out


def test_an_include_pattern_over_the_whole_host_is_bounded(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".ssh" / "conf.d").mkdir(parents=True)
    (home / ".ssh" / "conf.d" / "work").write_text("Host x\n")
    (home / ".ssh" / "config").write_text("Include conf.d/*\nInclude /*/*/*/*/*/*/*/*\n")
    out = _linked_places(home, timeout=20)
    assert str(home / ".ssh" / "conf.d") in out, out  # the ordinary pattern's directory, still guarded


def test_an_included_file_naming_tens_of_thousands_is_read_quickly_and_the_operators_names_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    hostile = tmp_path / "dotfiles" / "ssh" / "b"  # in the workspace: a command wrote it
    hostile.parent.mkdir(parents=True)
    hostile.write_text("".join(f"Include {tmp_path}/nx/a{i}\n" for i in range(50_000)))  # 1.4 MB
    nested = tmp_path / "other" / "c"
    (home / ".ssh" / "a").write_text(f"Include {nested}\n")  # the operator's own, named first
    (home / ".ssh" / "config").write_text(f"Include a\nInclude {hostile}\n")
    sourced = hostile.parent / "aliases.sh"  # the same, for the rc reader
    sourced.write_text("".join(f". {tmp_path}/nx/s{i}\n" for i in range(50_000)))
    (home / ".bashrc").write_text(f". {sourced}\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", "")
    resolved: list[str] = []
    realpath = os.path.realpath

    def counted(path: str) -> str:
        resolved.append(path)
        return realpath(path)

    monkeypatch.setattr(os.path, "realpath", counted)
    started = time.monotonic()
    found = _protect_home._linked_places()
    took = time.monotonic() - started
    # Each of the 39 000 names was resolved before (2.2-2.4 s idle); ~550 now. The count, not the
    # time, is the bound: 0.4 s idle became 0.57 s in a loaded CI lane (stop 62's landing).
    assert len(resolved) < 2_000, f"{len(resolved)} paths resolved in one read"
    assert took < 3, f"{took:.1f} s a read"
    assert str(nested) in found and str(hostile) in found and str(sourced) in found, sorted(found)[:5]
