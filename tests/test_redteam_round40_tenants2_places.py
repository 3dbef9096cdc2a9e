"""Round 40 (tenants2): the places a shellrt process may choose for its private directories beyond
`OwnedDir`'s default. A bwrap sandbox replaces /tmp, /dev and /run for every process, but the temp
dir only for its own process: the docker I/O directory's fallbacks (the temp dir, /var/tmp) and a
batch ``scratch_dir`` under ``TMPDIR`` stayed in the read-only view of another shellrt process's
bwrap commands of the same uid (request files the executor sources; workspace copies with their
hidden tests)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox import BwrapConfig
from sandbox.docker import _iobase
from shellrt.batch.worker import _scratch_shown_to_other_tasks


@pytest.fixture
def temp_dir_elsewhere(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """``TMPDIR`` outside /tmp (as an operator bounding a session's disk sets it)."""
    place = Path(tempfile.mkdtemp(prefix="rt40-tenants2-", dir="/var/tmp"))
    monkeypatch.setenv("TMPDIR", str(place))
    monkeypatch.setattr(tempfile, "tempdir", None)
    try:
        yield place
    finally:
        tempfile.tempdir = None
        os.rmdir(place)


def test_docker_io_dir_is_never_offered_where_another_processes_sandbox_sees_it(
    temp_dir_elsewhere: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed before (1 of 1): the candidates held the temp dir and /var/tmp (and any XDG_RUNTIME_DIR)."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(temp_dir_elsewhere))
    offered = [os.path.realpath(p) for p in _iobase._candidates()]
    assert offered, "no place offered at all"
    for place in offered:
        assert any(place == top or place.startswith(top + "/") for top in ("/dev/shm", "/run", "/var/run", "/tmp")), (
            place
        )


def test_batch_scratch_under_a_temp_dir_outside_tmp_is_refused_for_a_non_root_caller(
    temp_dir_elsewhere: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed before (1 of 1): a ``scratch_dir`` below ``TMPDIR`` was accepted (hidden from this
    process's sandboxes only); the refusal says to use /tmp."""
    monkeypatch.setattr(os, "geteuid", lambda: 65534)  # the non-root caller's judgement, run by root
    why = _scratch_shown_to_other_tasks(BwrapConfig(), temp_dir_elsewhere / "scratch")
    assert why is not None and "/tmp" in why, why
    assert _scratch_shown_to_other_tasks(BwrapConfig(), Path("/tmp/rt40-scratch")) is None
