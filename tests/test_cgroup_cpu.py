"""tests/_cgroup_cpu.py: the kinds it sorts processes into and the report it writes (round 56, suite56)."""

from __future__ import annotations

import json
from pathlib import Path

from tests import _cgroup_cpu

FILE = "tests/test_cgroup_cpu.py"
PY = "/root/.pyenv/versions/3.11.7/bin/python3"


def test_processes_are_told_apart_by_their_command_lines() -> None:
    kinds = {
        f"{PY} -m pytest -q -p no:cacheprovider -p no:xdist {FILE}": "the test file's pytest",
        f"{PY} -m shellrt serve --jsonl --workspace /w": "shellrt CLI (serve)",
        "/usr/bin/python3 -m pytest -q tests/test_x.py": "non-root twin (uid 65534 pytest)",
        f"{PY} /tmp/pytest-of-root/pytest-1/t0/server.py images.json": "MCP test servers (SDK)",
        "bwrap --unshare-all -- sh -c true": "bwrap",
        "/usr/lib/gcc/x86_64-linux-gnu/12/cc1 -quiet -": "other: cc1",
        "": "unnamed",
    }
    assert {command: _cgroup_cpu.report_kind(command, FILE) for command in kinds} == kinds


def test_the_report_leaves_start_ups_out_and_adds_the_docker_side(tmp_path: Path) -> None:
    row = {
        "file": FILE,
        "status": 0,
        "wall": 3.0,
        "cgroup": 5.0,
        "percpu": [2.5, 2.5],
        "leftover_pids": 0,
        "docker_daemons": 0.5,
        "docker_containers": 0.5,
        "kinds": {},
        "processes": [
            [f"{PY} -m pytest -q -p no:cacheprovider -p no:xdist {FILE}", 3.0],
            ["bwrap -- true", 1.0],
        ],
    }
    (tmp_path / "results.jsonl").write_text(json.dumps(row) + "\n")
    (tmp_path / "f0" / "tests").mkdir(parents=True)
    (tmp_path / "f0" / "tests" / "cpu-main-1.tsv").write_text(
        f"<collection>\t1.000\t0.000\t0\n{FILE}::test_a\t1.500\t0.500\t2.0\n"
    )
    text = _cgroup_cpu.report(tmp_path)
    # 5 s in the cgroup + 1 s Docker side - 1 s of start-up; the log saw 3 of the cgroup's 5.
    assert text.splitlines()[0].startswith("1 files, 5 CPU seconds (less 1 of pytest start-ups)")
    assert "the per-test log saw 3 of its files' 5 cgroup seconds" in text
    assert "| the test file's pytest | 2.0 | 40.0% |" in text
    assert "| bwrap | 1.0 | 20.0% |" in text
    assert "| Docker side (dockerd, containerd, containers) | 1.0 | 20.0% |" in text
    assert "| unsampled (processes under 0.1 s, last intervals, kernel) | 1.0 | 20.0% |" in text
