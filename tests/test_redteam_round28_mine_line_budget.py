"""Round 28 merge fix of the jsonline guard: a line over 1 MiB was refused for the ``[ { , :`` in
its strings too, so a Write of a CSV file (one string, a million commas) could not be sent at all
(failed before: 1 of 1). The count is made again outside strings when the line has few strings;
what the guard refuses -- many small values -- is still refused, and within a bounded time
whatever the line holds (runs of backslashes, strings left open)."""

from __future__ import annotations

import json
import time

from shellrt.server._line_budget import over_budget


def _took(line: bytes) -> tuple[str | None, float]:
    start = time.process_time()
    verdict = over_budget(line)
    return verdict, time.process_time() - start


def test_a_big_file_in_one_string_is_read_and_many_values_are_not() -> None:
    csv = "a,b,c,d,e,f,g,h,i,j\n" * 150_000  # 1.5 M commas in one string
    write = {"type": "tool_use", "input": {"file_path": "/w/t.csv", "content": csv, "q": 'x\\"y,:'}}
    verdict, _ = _took(json.dumps(write).encode())
    assert verdict is None, verdict
    refused = [
        b"[" + b"[]," * 1_100_000 + b"[]]",  # many values, no strings
        b"[" + b'"a",' * 1_100_000 + b'"a"]',  # many strings: judged by the first count
        b'["' + b'\\"' * 5000 + b'",' + b"0," * 1_100_000 + b"0]",  # few strings, many values
        b'["' + b"\\\\" * 2_000_000 + b'",' + b"0," * 1_100_000 + b"0]",  # a long backslash run
        b'["' + b"," * 2_000_000,  # a string left open
    ]
    for line in refused:
        verdict, cpu = _took(line)
        assert verdict is not None and "1,000,000" in verdict, line[:40]
        assert cpu < 1.0, (line[:40], cpu)
