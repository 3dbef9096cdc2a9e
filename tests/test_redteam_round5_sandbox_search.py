"""Red team round 5: Grep held every hit's whole line in the host's memory.

A repository (or a command) makes one file of a single 1 MiB line and hard-links
it a few hundred times: one megabyte on disk. ripgrep's JSON output carries each
whole line (its ``--max-columns`` does not apply to JSON), the host collected
all of it, and kept every line whole in its hits: 200 links cost the shellrt
process 600 MB, 20,000 links any host's memory -- every session of the process
with it. Many short matching lines did the same through their number. The
Python walker (docker, local with masks, no ripgrep) kept whole lines too.

Each search now keeps at most a screenful of each line and a bounded number of
lines, wherever it runs (ripgrep on the host, ripgrep in the sandbox, the
Python walker), and says how to narrow a search that finds more.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import require

pytestmark = pytest.mark.anyio

#: Runs one Grep in a fresh process and prints the growth of its peak resident memory.
_PROBE = r"""
import json, os, sys, anyio
from pathlib import Path
import shellrt

ws, backend, pattern, mode = Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]

def peak_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM"):
            return int(line.split()[1]) // 1024

async def main():
    async with shellrt.Runtime(
        workspace=ws, sandbox=backend, mode="bypassPermissions", session_dir=ws.parent / "session",
        settings_files=(),
    ) as rt:
        await rt.run([{"type": "tool_use", "id": "warm-glob", "name": "Glob", "input": {"pattern": "*.none"}}])
        before = peak_mb()
        user = await rt.run([{"type": "tool_use", "id": "big-grep", "name": "Grep",
                              "input": {"pattern": pattern, "output_mode": mode}}])
        block = user["content"][0]
        content = block["content"]
        text = content if isinstance(content, str) else "\n".join(c.get("text", "") for c in content)
        print(json.dumps({"growth_mb": peak_mb() - before, "is_error": bool(block.get("is_error")),
                          "text": text[:4000]}))

anyio.run(main)
"""

VARIANTS = ["rg-host", "python-walker", "rg-in-sandbox"]


def _grep(tmp_path: Path, variant: str, pattern: str, mode: str) -> dict[str, object]:
    backend = "bwrap" if variant == "rg-in-sandbox" else "local"
    if backend == "bwrap":
        require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    if variant != "python-walker":
        require(shutil.which("rg") is not None, "ripgrep is not installed (apt-get install ripgrep)")
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    if variant == "python-walker":
        env["SHELLRT_NO_RIPGREP"] = "1"
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, str(tmp_path / "ws"), backend, pattern, mode],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _links(ws: Path, name: str, body: str, count: int) -> None:
    ws.mkdir(exist_ok=True)
    (ws / name).write_text(body)
    for n in range(count):
        os.link(ws / name, ws / f"link-{n}-{name}")


@pytest.mark.parametrize("variant", VARIANTS)
def test_hard_linked_long_lines_cost_the_host_no_more_than_a_screenful(tmp_path: Path, variant: str) -> None:
    """160 links to one 1 MiB line (1 MiB on disk): the host's memory must not pay 160 MiB, let alone
    the 500 MB it paid; the search still answers, each line shortened."""
    _links(tmp_path / "ws", "min.js", "needle" + "a" * (1 << 20) + "\n", 160)
    result = _grep(tmp_path, variant, "needle", "content")
    assert not result["is_error"], result
    assert "needle" + "a" * 100 in str(result["text"]) and "… [truncated]" in str(result["text"]), result
    assert int(str(result["growth_mb"])) < 100, result


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_flood_of_matching_lines_stops_with_advice_instead_of_filling_memory(
    tmp_path: Path, variant: str
) -> None:
    """Short lines by the hundred thousand (6 links to a 70,000-line file): the search stops at its
    bound and says how to narrow it, rather than holding every line."""
    _links(tmp_path / "ws", "log.txt", "needle line\n" * 70_000, 6)
    result = _grep(tmp_path, variant, "needle", "content")
    assert result["is_error"], result
    assert "Narrow it" in str(result["text"]) and "100,000" in str(result["text"]), result


@pytest.mark.parametrize("variant", VARIANTS)
def test_an_ordinary_search_below_the_bounds_is_unchanged(tmp_path: Path, variant: str) -> None:
    _links(tmp_path / "ws", "a.py", "import os\nneedle = 1\n" + "x" * 600 + "needle\n", 2)
    result = _grep(tmp_path, variant, "needle", "content")
    text = str(result["text"])
    assert not result["is_error"], result
    # `link-1-a.py` holds what reads as a numbered separator (``-1-``), so its name is quoted (round 16).
    assert "a.py:2:needle = 1" in text and '"link-1-a.py":3:' + "x" * 100 in text, text
    assert sum(line.endswith("… [truncated]") for line in text.splitlines()) == 3, text


@pytest.mark.parametrize("variant", VARIANTS)
async def test_a_forest_of_hard_links_stops_the_listing_with_advice(
    tmp_path: Path, variant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hard links cost no inode: ten million names under the workspace are a loop of ``ln`` away, and
    Glob (and Grep's file list) held every one in the host's memory. The listing stops at its bound
    (lowered here from a million to 300) and says to search a smaller directory."""
    import shellrt
    import shellrt.tools._search_types as types

    backend = "bwrap" if variant == "rg-in-sandbox" else "local"
    if backend == "bwrap":
        require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    if variant == "python-walker":
        monkeypatch.setenv("SHELLRT_NO_RIPGREP", "1")
    monkeypatch.setattr(types, "MAX_LISTED_FILES", 300, raising=False)
    _links(tmp_path / "ws", "f.txt", "needle\n", 400)
    async with shellrt.Runtime(
        workspace=tmp_path / "ws",
        sandbox=backend,
        mode="bypassPermissions",
        session_dir=tmp_path / "s",
        settings_files=(),
    ) as rt:
        for name, raw in (("Glob", {"pattern": "*.txt"}), ("Grep", {"pattern": "needle"})):
            if name == "Grep" and backend == "local":
                continue  # local (with its default masks) searches in a child process, which keeps the real bound
            user = await rt.run(
                [{"type": "tool_use", "id": f"forest-{os.urandom(4).hex()}", "name": name, "input": raw}]
            )
            block = user["content"][0]
            assert block.get("is_error") and "More than 300 files" in str(block["content"]), (name, block)
        user = await rt.run(
            [
                {
                    "type": "tool_use",
                    "id": f"forest-{os.urandom(4).hex()}",
                    "name": "Glob",
                    "input": {"pattern": "nothing*"},
                }
            ]
        )
        monkeypatch.setattr(types, "MAX_LISTED_FILES", 1000)
        user = await rt.run(
            [
                {
                    "type": "tool_use",
                    "id": f"forest-{os.urandom(4).hex()}",
                    "name": "Glob",
                    "input": {"pattern": "*.txt"},
                }
            ]
        )
        assert not user["content"][0].get("is_error"), user


@pytest.mark.parametrize("width", [2000])
async def test_a_wide_tree_cannot_exhaust_the_hosts_file_descriptors(
    tmp_path: Path, width: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Python walker (docker, local with masks, no ripgrep) runs in the host process and opened every
    subdirectory of a directory before descending: 2,000 empty directories held 2,000 fds at once (over a
    service's usual limit of 1,024 every other open of every session failed meanwhile, and the listing
    silently lost directories). It now holds one fd per level of the path it is on."""
    import anyio

    import shellrt

    monkeypatch.setenv("SHELLRT_NO_RIPGREP", "1")
    ws = tmp_path / "ws"
    ws.mkdir()
    for n in range(width):
        (ws / f"d{n}").mkdir()
        (ws / f"d{n}" / "f.txt").write_text("needle\n")
    async with shellrt.Runtime(
        workspace=ws, sandbox="local", mode="bypassPermissions", session_dir=tmp_path / "s", settings_files=()
    ) as rt:
        # Relative to what this process holds already (earlier tests of the same run hold some).
        baseline = len(os.listdir("/proc/self/fd"))
        peak = 0

        async def sample() -> None:
            nonlocal peak
            while True:
                peak = max(peak, len(os.listdir("/proc/self/fd")))
                await anyio.sleep(0.001)

        async with anyio.create_task_group() as tg:
            tg.start_soon(sample)
            user = await rt.run(
                [
                    {
                        "type": "tool_use",
                        "id": f"wide-{os.urandom(4).hex()}",
                        "name": "Glob",
                        "input": {"pattern": "**/f.txt"},
                    }
                ]
            )
            tg.cancel_scope.cancel()
    assert f"showing 100 of {width} files" in str(user["content"][0]["content"]), user
    assert peak - baseline < 300, (peak, baseline)
