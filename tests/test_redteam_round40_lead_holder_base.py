"""Since round 40 (tenants) shellrt keeps its temporary directories below /tmp whatever TMPDIR says.
A host whose /tmp cannot hold them (read-only, as the cgroup v2 test VM's root was; missing) got a
bare ``OSError: [Errno 30] Read-only file system`` from deep inside a bwrap start (CI run before
landing, 2 scenarios). Now the start says why /tmp and what to do, and does not fall back to TMPDIR
(another process's sandboxes hide /tmp, not this process's temp dir)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox import _scratch
from sandbox.errors import BackendUnavailableError


def test_an_unusable_tmp_is_named_with_its_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Failed before: FileNotFoundError with no word of /tmp's role or the fix."""
    gone = tmp_path / "no-such-tmp"
    monkeypatch.setattr(_scratch, "HOLDER_BASE", gone)
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # a usable TMPDIR is not taken instead
    with pytest.raises(BackendUnavailableError) as caught:
        _scratch.OwnedDir("shellrt-r40-lead-")
    said = str(caught.value)
    assert f"below {gone} whatever TMPDIR says" in said and "mount -t tmpfs" in said, said
    assert isinstance(caught.value, OSError)  # callers that catch OSError still do
    assert list(tmp_path.iterdir()) == []


def test_a_directory_the_caller_names_fails_as_itself(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        _scratch.OwnedDir("shellrt-r40-lead-", tmp_path / "missing")
