"""Stop 62 (lead): the home's obeyed files, read to stall every guard by their size.

`linked_places` reads again what ``~/.bashrc`` sources and ``~/.ssh/config`` includes (every guard,
and the file tools' write judgements once a second). Round 36 review2 bounded the names one read
collects (256); each file was still read up to 1 MiB and scanned by five patterns (~0.25 s a MiB):
a dotfiles workspace's sourced file naming 40 files of 1 MiB made every read 9.5 s here (255 of
them: about a minute). One read now takes in 2 MiB in all, the operator's own files first.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from shellrt.supervisor import _protect_home

_PAD = ("x" * 60 + "\n") * ((1 << 20) // 61)  # no line any of the patterns matches


def _count_bytes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    read: list[int] = []
    real = _protect_home.read_regular

    def counted(path: str, limit: int) -> bytes | None:
        content = real(path, limit)
        read.append(0 if content is None else len(content))
        return content

    monkeypatch.setattr(_protect_home, "read_regular", counted)
    return read


@pytest.mark.parametrize("reader", ["rc", "ssh"])
def test_many_large_files_named_by_a_workspace_file_are_read_within_one_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reader: str
) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    dot = tmp_path / "dotfiles"  # the workspace: a command (or the clone) wrote all of it
    dot.mkdir()
    for i in range(40):
        (dot / f"f{i}").write_text(_PAD)
    if reader == "rc":
        (dot / "a.sh").write_text("".join(f". {dot}/f{i}\n" for i in range(40)))
        (home / ".bashrc").write_text(f". {dot}/a.sh\n")
    else:
        (dot / "a.sh").write_text("".join(f"Include {dot}/f{i}\n" for i in range(40)))
        (home / ".ssh" / "config").write_text(f"Include {dot}/a.sh\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", "")
    read = _count_bytes(monkeypatch)
    started = time.monotonic()
    found = _protect_home._linked_places()
    took = time.monotonic() - started
    assert sum(read) <= (2 << 20) + (64 << 10), f"{sum(read) / (1 << 20):.1f} MiB read in one read of the home's files"
    assert str(dot / "a.sh") in found and str(dot / "f0") in found, sorted(found)[:5]  # still guarded by name
    assert took < 5, f"{took:.1f} s a read (9.5 s before, idle)"


def test_the_operators_own_files_spend_the_budget_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    dot = tmp_path / "dotfiles"
    dot.mkdir()
    for i in range(4):
        (dot / f"big{i}").write_text(_PAD)
    (dot / "a.sh").write_text("".join(f". {dot}/big{i}\n" for i in range(4)))
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "env.sh").write_text(f". {tmp_path}/plant.sh\n")  # the operator's own, named next to it
    (home / ".bashrc").write_text(f". {dot}/a.sh\n. {mine}/env.sh\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", "")
    found = _protect_home._linked_places()
    assert str(tmp_path / "plant.sh") in found, sorted(found)  # depth 2 of the operator's: read before depth 2 of the big ones


def test_one_name_sourced_again_and_again_is_read_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    dot = tmp_path / "dotfiles"
    dot.mkdir()
    (dot / "big").write_text(_PAD)
    (dot / "a.sh").write_text(f". {dot}/big\n" * 200)
    (home / ".bashrc").write_text(f". {dot}/a.sh\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", "")
    read = _count_bytes(monkeypatch)
    _protect_home._linked_places()
    assert sum(read) < (1 << 20) + (64 << 10), f"{sum(read) / (1 << 20):.1f} MiB read for one 1 MiB file"
