"""The in-flight record's mark is flipped through a descriptor held on it (issue 22, local latency):
no ``chmod`` of its path per command. A record removed or replaced while idle is written afresh
before the next command (the path ``chmod`` failed there: the command ran without a record)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from shellrt.supervisor import _inflight
from shellrt.supervisor._inflight import InflightRecord, orphaned_records


def _record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[InflightRecord, Path]:
    monkeypatch.setenv("SHELLRT_HOME", str(tmp_path / "home"))
    ws = tmp_path / "ws"
    ws.mkdir()
    return InflightRecord(ws), ws


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def _baseline(tag: str) -> dict[str, Any]:
    return {"files": {tag: {}}, "shared_dirs": []}


def test_marks_flip_without_a_path_chmod(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record, _ = _record(tmp_path, monkeypatch)
    record.in_flight("k1", lambda: _baseline("a"))
    assert _mode(record.path) == 0o600

    def no_chmod(*args: object, **kwargs: object) -> None:
        raise AssertionError("chmod of the record's path")

    monkeypatch.setattr(_inflight.os, "chmod", no_chmod)
    for _ in range(3):
        record.checked()
        assert _mode(record.path) == 0o400
        record.in_flight("k1", lambda: pytest.fail("same baseline: not rewritten"))
        assert _mode(record.path) == 0o600
    record.checked()
    monkeypatch.undo()
    record.clear()
    assert not record.path.exists()
    assert list(record.path.parent.iterdir()) == []


@pytest.mark.parametrize("how", ["removed", "replaced"])
def test_a_record_gone_while_idle_is_written_afresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    record, ws = _record(tmp_path, monkeypatch)
    record.in_flight("k1", lambda: _baseline("a"))
    record.checked()
    if how == "removed":
        record.path.unlink()
    else:
        impostor = record.path.with_name("impostor")
        impostor.write_text(json.dumps({"root": "elsewhere", "baseline": {}}))
        os.replace(impostor, record.path)
    record.in_flight("k1", lambda: _baseline("a"))
    assert _mode(record.path) == 0o600
    assert json.loads(record.path.read_text())["baseline"] == _baseline("a")
    record.checked()
    assert _mode(record.path) == 0o400
    record.clear()
    assert orphaned_records(ws) == []


def test_a_failed_write_leaves_no_descriptor_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record, _ = _record(tmp_path, monkeypatch)
    before = set(os.listdir("/proc/self/fd"))

    def broken() -> dict[str, Any]:
        return {"files": {"x": object()}}  # not JSON: the write fails before any file is made

    with pytest.raises(TypeError):
        record.in_flight("k1", broken)
    real_replace = os.replace

    def failing_replace(src: str | Path, dst: str | Path) -> None:
        raise OSError("disk gone")

    monkeypatch.setattr(_inflight.os, "replace", failing_replace)
    with pytest.raises(OSError, match="disk gone"):
        record.in_flight("k1", lambda: _baseline("a"))
    monkeypatch.setattr(_inflight.os, "replace", real_replace)
    assert set(os.listdir("/proc/self/fd")) <= before | {str(n) for n in range(3)}
    record.in_flight("k1", lambda: _baseline("a"))
    assert _mode(record.path) == 0o600
    record.clear()
