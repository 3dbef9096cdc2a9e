"""tests/_cpu_log.py: each test's CPU seconds, written only when asked for (round 52, suitetime2)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from tests import _cpu_log


def test_a_test_line_counts_the_cpu_of_the_children_it_reaped(tmp_path: Path) -> None:
    log = _cpu_log.CpuLog(tmp_path, "gw7")
    log.pytest_collection_finish(cast(pytest.Session, None))
    item = cast(pytest.Item, SimpleNamespace(nodeid="tests/test_x.py::test_y[1]"))
    wrapper = cast(Any, log.pytest_runtest_protocol(item))
    next(wrapper)
    # A child that burns ~0.2 s of CPU, reaped within the "test": its seconds are the test's.
    subprocess.run([sys.executable, "-c", "sum(range(6_000_000))"], check=True)
    with pytest.raises(StopIteration):
        next(wrapper)
    log.pytest_unconfigure()
    (written,) = tmp_path.glob("cpu-gw7-*.tsv")
    first, line = written.read_text().splitlines()
    assert first.startswith("<collection>\t")
    nodeid, own, children, wall = line.split("\t")
    assert nodeid == "tests/test_x.py::test_y[1]"
    assert float(children) > 0 and float(own) >= 0 and float(wall) > 0


def test_nothing_is_registered_unless_asked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    registered: list[object] = []
    config = cast(
        pytest.Config,
        SimpleNamespace(
            pluginmanager=SimpleNamespace(register=lambda plugin, name: registered.append(plugin))
        ),
    )
    monkeypatch.delenv(_cpu_log.VARIABLE, raising=False)
    _cpu_log.register(config)
    assert registered == [] and not list(tmp_path.iterdir())
    monkeypatch.setenv(_cpu_log.VARIABLE, str(tmp_path / "log"))
    _cpu_log.register(config)
    assert len(registered) == 1 and isinstance(registered[0], _cpu_log.CpuLog)
    cast(_cpu_log.CpuLog, registered[0]).pytest_unconfigure()
    assert len(list((tmp_path / "log").glob("cpu-*.tsv"))) == 1
