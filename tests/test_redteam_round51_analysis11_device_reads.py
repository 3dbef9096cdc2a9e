"""Red team, round 51 (analysis11): a device or endless file read under another spelling.

The read-only judgement refused a read of ``/dev/zero``, ``/dev/stdin``, ``/proc/self/fd/0`` (they never end)
by the word's exact text: ``//dev/zero``, ``/dev/./zero``, ``/dev/../dev/zero``, ``../../…/dev/zero`` (``..`` stops
at the root), ``/proc/thread-self/fd/0``, ``/proc/self/root/dev/zero`` and ``cd /dev && cat zero`` name the same
files and were judged read-only and concurrency-safe; so were other devices and endless files, which opening
acts on or which never end (``/dev/watchdog`` arms a reboot timer, ``/dev/st0`` rewinds a tape, ``/dev/kmsg``,
``/proc/kmsg`` (its reads consume the kernel log), ``trace_pipe``). In plan mode (only read-only calls run)
these were put to the user as reads instead of refused. Now each path word is read as the kernel resolves
its text (``//``, ``.``, ``..``, a ``cd`` to a system directory before it): a device other than ``/dev/null``,
a ``/proc`` file-descriptor or root link, ``kmsg`` and ``trace_pipe`` are not read-only.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from shellrt.analysis import analyze
from shellrt.tools.bash import Bash
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide

ESCAPE = "../" * 40  # more `..` than any directory is deep: they stop at the root
ATTACKS = [
    "cat //dev/zero", "cat /dev/./zero", "cat /dev//urandom", "cat /dev/../dev/zero", f"cat {ESCAPE}dev/zero",
    "wc -c < //dev/zero", "cat /proc/thread-self/fd/0", "cat /proc/self/root/dev/zero", "cat /proc/1/fd/0",
    "cd /dev && cat zero", "cd / && wc -c dev/zero", "cat /dev/kmsg", "cat /proc/kmsg", "head /dev/watchdog",
    "cat /sys/kernel/tracing/trace_pipe", "wc -c < /dev/kmsg", "cat /dev/st0", "grep x /dev/sda", "cat /dev/fd/3",
    "cat ~/../../../../dev/zero", "cat /dev/stdout",
]  # fmt: skip
KEPT = ["cat /dev/null", "ls /dev", "head -c 8 /dev/urandom", "cat x 2>/dev/null", "cat /proc/cpuinfo", "wc -l < x",
        "ls /dev/", "cd /usr && cat share/x"]  # fmt: skip


def test_the_spellings_name_the_same_files() -> None:
    """The premise, checked on this machine's kernel: each spelling opens the very file the exact text names."""
    for spelling, exact in [("//dev/zero", "/dev/zero"), ("/dev/./zero", "/dev/zero"), ("/dev/../dev/zero", "/dev/zero"),
                            (f"{Path.cwd()}/{ESCAPE}dev/zero", "/dev/zero"), ("/proc/self/root/dev/zero", "/dev/zero")]:  # fmt: skip
        assert os.path.samefile(spelling, exact), spelling
    with open(__file__, "rb") as mine:  # a descriptor of this process's own, whatever its standard input is
        assert os.path.samefile(f"/proc/thread-self/fd/{mine.fileno()}", f"/proc/self/fd/{mine.fileno()}")


def test_device_and_endless_reads_are_not_read_only() -> None:
    judged = [c for c in ATTACKS if analyze(c).read_only or analyze(c).concurrency_safe]
    refused = [c for c in KEPT if not analyze(c).read_only]
    assert (judged, refused) == ([], [])


@pytest.mark.anyio
async def test_plan_mode_refuses_them_as_it_refuses_dev_zero(tmp_path: Path) -> None:
    """Plan mode runs only read-only calls: the spellings are refused as ``cat /dev/zero`` is, not put to the user."""
    calls = ["cat /dev/zero", *ATTACKS[:3], "cd /dev && cat zero", "cat /proc/self/root/dev/zero"]
    got = await decide(tmp_path, Bash(), calls, "plan")
    assert [c for c, d in zip(calls, got, strict=True) if d != "deny"] == []
