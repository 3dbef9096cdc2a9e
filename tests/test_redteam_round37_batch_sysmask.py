"""Round 37: one dataset row masked what every other task's sandbox runs on.

``shellrt batch run`` hides every task's workspace source in every task's sandbox (round 27), read
from *every* line of the task file before the run -- an invalid line's or a refused task's too.
Only a source that *is or contains* a system directory (``/``, ``/usr``, the temp dir) was left
unmasked; one *inside* a system directory was masked for every task. A single line
``{"workspace": "/usr/lib/x86_64-linux-gnu"}`` (not even a valid task: no id, never run) made every
other task ``error`` ("bubblewrap cannot create namespaces here": its ``true`` found no libc), and a
narrower one (``/usr/lib/python3/dist-packages``, a tool's own directory) would turn the other tasks'
checks into ``failed`` verdicts. The host interpreter shellrt's sandboxes start (bwrap's zygote runs
it) and shellrt's own code were just as maskable. A source inside those is now never masked, and
its own task is ``error`` saying to use a directory of its own.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import sandbox
from shellrt.batch import dataset_masks
from shellrt.batch.dataset_masks import unmaskable_source
from tests._batch_helpers import run_cli
from tests._bwrap_session import require_bwrap

_LIBS = next(p for p in ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64") if Path(p).is_dir())
_PY_JSON = str(Path(json.__file__).parent)  # inside the host interpreter's prefix


@pytest.mark.parametrize(
    "path",
    [_LIBS, "/usr/share", "/etc/ssl", "/usr/bin", _PY_JSON, sys.base_prefix, str(Path(sandbox.__file__).parent)],
)
def test_what_sandboxes_run_on_is_never_a_data_mask(path: str) -> None:
    assert unmaskable_source(path) is not None
    assert dataset_masks([Path(path)]) == ()


def test_a_toolchain_on_path_is_never_a_data_mask(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "opt" / "tool" / "bin").mkdir(parents=True)
    monkeypatch.setenv("PATH", f"{tmp_path}/opt/tool/bin:/usr/bin:/bin")
    assert unmaskable_source(tmp_path / "opt") is not None
    assert dataset_masks([tmp_path / "opt" / "tool"]) == ()


def test_a_dataset_of_its_own_is_still_masked(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    assert unmaskable_source(tmp_path / "data") is None
    assert dataset_masks([tmp_path / "data"]) == (tmp_path / "data",)


def test_one_row_cannot_take_the_other_tasks_system(tmp_path: Path) -> None:
    require_bwrap()
    rows = [
        {"id": "honest", "sandbox": "bwrap", "commands": ["echo hello; python3 -c 'import json; print(2)'"]},
        {"workspace": _LIBS},  # an invalid line: it never runs, yet it was scanned
        {"id": "mine", "sandbox": "bwrap", "workspace": _PY_JSON, "commands": ["true"]},
        {"id": "data", "sandbox": "bwrap", "workspace": "data", "commands": ["true"]},  # the run masks data
    ]
    (tmp_path / "data").mkdir()
    path, out = tmp_path / "tasks.jsonl", tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    proc = run_cli("run", str(path), "--out", str(out), "-j", "1", "--prestart", "0", "-q", timeout=300)
    results = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    honest = results["honest"]
    assert honest["status"] == "ok", (honest["error"], honest["commands"], proc.stderr[-2000:])
    assert honest["commands"][0]["preview"].split() == ["hello", "2"]
    assert results["mine"]["status"] == "error" and "every task's sandbox needs" in results["mine"]["error"]
    assert results["data"]["status"] == "ok"
