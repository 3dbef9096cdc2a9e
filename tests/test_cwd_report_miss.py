"""The cwd report read after every command: a miss (the usual case, no ``cd``) costs one failed
lookup and no unlink; whatever else the sandbox left at the path is still never followed or
opened blocking, and is removed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sandbox._hostproc import read_cwd_report


def test_a_missing_report_tries_no_unlink(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fails on the old code (it unlinked the path it had just failed to open)."""
    removed: list[object] = []
    monkeypatch.setattr(os, "unlink", lambda path, *a, **k: removed.append(path))
    assert read_cwd_report(tmp_path / "cwd") is None
    assert removed == []


def test_a_report_is_read_and_removed(tmp_path: Path) -> None:
    report = tmp_path / "cwd"
    report.write_text("/work/sub\n")
    assert read_cwd_report(report) == "/work/sub"
    assert not report.exists()


@pytest.mark.parametrize("kind", ["symlink", "fifo", "hardlink", "directory"])
def test_what_is_not_a_lone_regular_file_is_not_read_and_is_removed(tmp_path: Path, kind: str) -> None:
    secret = tmp_path / "host-secret"
    secret.write_text("/etc/shadow-ish\n")
    report = tmp_path / "cwd"
    if kind == "symlink":
        report.symlink_to(secret)
    elif kind == "fifo":
        os.mkfifo(report)  # an open without O_NONBLOCK would hang here
    elif kind == "hardlink":
        os.link(secret, report)
    else:
        report.mkdir()
    assert read_cwd_report(report) is None
    if kind != "directory":  # unlink cannot remove a directory: left as before
        assert not os.path.lexists(report)
    assert secret.read_text() == "/etc/shadow-ish\n"
