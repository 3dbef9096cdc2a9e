"""Round 16, exhaustion: ``shellrt sessions show`` read a whole transcript into memory.

A transcript grows with every call (each line carries the call's input twice and its three
result faces); a long session's is gigabytes. ``show`` read it whole (``read_text`` then
``splitlines``: two copies and a list), so showing it cost the operator's host that much memory
twice over, and a start line printed the call's whole input (a 2 MB Write, 2 MB on the terminal).
It now reads line by line and cuts a start line's input as it cuts a call line's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_MEASURE = (
    "import resource, subprocess, sys\n"
    "done = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, len(done.stdout), done.returncode)\n"
)


def test_show_streams_a_big_transcript_and_cuts_long_inputs(tmp_path: Path) -> None:
    home = tmp_path / "home"
    session = home / "sessions" / "big"
    session.mkdir(parents=True)
    content = "x" * 2_000_000
    with open(session / "transcript.jsonl", "w") as fh:  # 30 calls writing 2 MB each: ~120 MB
        for i in range(30):
            tool_input = {"file_path": f"/ws/f{i}", "content": content}
            fh.write(
                json.dumps(
                    {
                        "ts": 0,
                        "type": "start",
                        "tool_use_id": f"t{i}",
                        "tool_name": "Write",
                        "input": tool_input,
                    }
                )
                + "\n"
            )
            call = {
                "ts": 0,
                "type": "call",
                "tool_use_id": f"t{i}",
                "tool_name": "Write",
                "input": tool_input,
            }
            fh.write(json.dumps({**call, "ran": True, "is_error": False}) + "\n")
    env = {
        **os.environ,
        "SHELLRT_HOME": str(home),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    argv = [sys.executable, "-m", "shellrt", "sessions", "show", "big"]
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, *argv], env=env, capture_output=True, text=True, timeout=60
    )
    peak_kb, printed, status = (int(x) for x in done.stdout.split())
    assert status == 0, done.stderr
    assert peak_kb < 100_000, f"showing a 120 MB transcript peaked at {peak_kb // 1024} MB"
    assert printed < 60 * 700, f"{printed:,} bytes printed for 60 lines"
