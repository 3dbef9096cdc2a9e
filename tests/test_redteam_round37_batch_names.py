"""Round 37: the names of the files a task left for collection took the harness's memory.

``collect.files`` bounds the files' count (1,000,000), their nesting (16,000,000 components) and
their bytes, but not the bytes of their *names*, which the task's commands choose: each name is
held in the harness (the set of matches, then the list of collected names) and written into the
task's results line (``files``). A command made 60,000 hard links of one empty file under a
3,800-byte directory chain in about a second; collecting ``out`` then held ~250 MB of names twice
in the process that runs every task and wrote a 250 MB results line (200,000 links: 1.6 GB peak
RSS and 100 s; the cap allowed a million). A collection now holds at most
`COLLECT_NAME_BYTES` (16 MiB) of names, as a line holds at most 16 MiB of previews; past it the
task is ``error`` naming the bound, before anything is copied.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests._batch_helpers import run_tasks
from tests._bwrap_session import require_bwrap

# 13 directories of 250-byte names, then 60,000 links of 200-byte names to a few empty files.
_MAKE = r"""
import os
fd = os.open("out", os.O_RDONLY) if os.path.isdir("out") else (os.mkdir("out"), os.open("out", os.O_RDONLY))[1]
for i in range(13):
    name = "%02d" % i + "x" * 248
    os.mkdir(name, dir_fd=fd)
    deeper = os.open(name, os.O_RDONLY, dir_fd=fd)
    os.close(fd)
    fd = deeper
for i in range(60000):
    if i % 30000 == 0:
        seed = "seed%d" % i
        os.close(os.open(seed, os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
    os.link(seed, "f%0200d" % i, src_dir_fd=fd, dst_dir_fd=fd)
print("made")
"""


def test_the_names_a_task_leaves_cannot_fill_the_harness(tmp_path: Path) -> None:
    require_bwrap()
    task = {
        "id": "names",
        "sandbox": "bwrap",
        "commands": [{"argv": ["python3", "-c", _MAKE]}],
        "collect": {"files": ["out"]},
    }
    proc, results = run_tasks(tmp_path, [task, {"id": "after", "sandbox": "bwrap", "commands": ["echo ok"]}],
                              timeout=600)
    line = max(len(raw) for raw in (tmp_path / "results.jsonl").read_text().splitlines())
    assert line < 20 << 20, f"a results line of {line:,} bytes"
    result = results["names"]
    assert result["commands"][0]["preview"].strip() == "made", result
    assert result["status"] == "error" and "names" in (result["error"] or ""), result["error"]
    assert "collect.files" in result["error"] and "narrow" in result["error"], result["error"]
    assert results["after"]["status"] == "ok"
    files = tmp_path / "results.jsonl.artifacts" / "names" / "files"
    assert not files.exists() or not any(files.rglob("f*")), "copied before the bound was known"
    assert json.loads  # (the lines above parsed every result)
