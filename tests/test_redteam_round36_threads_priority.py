"""Red team round 36 (threads): host threads a command's traffic drives, at the caller's priority.

The ``proxied`` network mode's filtering proxy is a thread of shellrt's own process
(`sandbox._proxy`), and every host-name lookup of the proxy and of WebFetch runs in a thread of
its own (`sandbox._lookup`). Priority, policy and I/O class are per thread on Linux and a new
thread inherits its creator's: under a caller at nice -5, under ``chrt -r 1`` or ``ionice -c 1``
a sandboxed command's connections and names were served at that raised priority (a busy loop of
requests outran every ordinary process of the host, no cgroup limit counts it). Each case starts
a child Python under the raised priority (root: lowering needs none, raising needs root) and
reads the proxy thread's nice and policy from ``/proc/self/task/<tid>/stat`` and a lookup
thread's from inside the resolver, plus both threads' I/O class.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parent.parent

_CHILD = r"""
import json, os, socket, sys, threading
from pathlib import Path
import anyio
from sandbox._bwrap_sched import io_class
from sandbox import _lookup
from sandbox._proxy import FilteringProxy
import asyncio, shutil, tempfile

if sys.argv[2] == "nobody":  # everything imported as root; from here on uid 65534 (nice is kept)
    anyio.run(anyio.to_thread.run_sync, lambda: None)  # lazy imports, while root can read them
    "name.test".encode("idna")
    os.setgroups([])
    os.setgid(65534)
    os.setuid(65534)
    assert os.geteuid() == 65534

def stat_of(tid):
    text = Path(f"/proc/self/task/{tid}/stat").read_text()
    fields = text[text.rindex(")") + 2:].split()
    return {"nice": int(fields[16]), "policy": int(fields[38])}

def here():
    tid = threading.get_native_id()
    return {**stat_of(tid), "io": io_class(), "main": tid == os.getpid()}

seen = {}
real = socket.getaddrinfo
def resolver(host, port, *args, **kwargs):
    seen["lookup"] = here()
    return real("127.0.0.1", port, *args, **kwargs)
socket.getaddrinfo = resolver

seen["caller"] = here()
anyio.run(_lookup.lookup, "name.test", 80, "s")

home = tempfile.mkdtemp(prefix="shellrt-r36-threads-")
proxy = FilteringProxy(Path(home) / "proxy.sock", allowed=("name.test",))
proxy.start()
try:
    async def probe():
        return here()
    async def pooled():  # a thread the proxy's loop starts inherits the proxy thread's priority
        return await asyncio.get_running_loop().run_in_executor(None, here)
    seen["proxy"] = asyncio.run_coroutine_threadsafe(probe(), proxy._loop).result(10)
    seen["proxy_pool"] = asyncio.run_coroutine_threadsafe(pooled(), proxy._loop).result(10)
    seen["proxy_stat"] = stat_of(proxy._thread.native_id)
finally:
    proxy.close()
    shutil.rmtree(home)
print(json.dumps(seen))
"""

_RAISES = {
    "nice -5": ["nice", "-n", "-5"],
    "SCHED_RR": ["chrt", "-r", "1"],
    "ionice -c 1": ["ionice", "-c", "1", "-n", "0"],
}


def _run_raised(prefix: list[str], user: str = "root") -> dict[str, dict[str, int]]:
    if os.geteuid() != 0:
        pytest.fail("needs root: only root can start a caller at a raised priority (run as root)")
    program = shutil.which(prefix[0])
    if program is None:
        pytest.fail(f"needs {prefix[0]} (apt-get install util-linux coreutils)")
    done = subprocess.run(
        [program, *prefix[1:], sys.executable, "-c", _CHILD, "-", user],
        cwd=_ROOT,
        env={**os.environ, "PYTHONPATH": str(_ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    seen: dict[str, dict[str, int]] = json.loads(done.stdout.splitlines()[-1])
    return seen


@pytest.mark.parametrize("raise_name", sorted(_RAISES))
def test_proxy_and_lookup_threads_run_calm(raise_name: str) -> None:
    _assert_calm(raise_name, _run_raised(_RAISES[raise_name]))


def test_a_non_root_caller_at_nice_minus_5_gets_calm_threads() -> None:
    """uid 65534 started at nice -5 (by root: it cannot lower its nice itself): it may raise its
    own nice back, never lower it, and that is all the fix needs."""
    _assert_calm("nice -5 (uid 65534)", _run_raised(_RAISES["nice -5"], "nobody"))


def _assert_calm(raise_name: str, seen: dict[str, dict[str, int]]) -> None:
    caller = seen["caller"]
    # The attack took: the caller itself runs raised.
    assert caller["nice"] < 0 or caller["policy"] == os.SCHED_RR or caller["io"] == 1, caller
    for name in ("lookup", "proxy", "proxy_stat", "proxy_pool"):
        thread = seen[name]
        assert not thread.get("main", False), (name, thread)
        assert thread["nice"] >= 0, (raise_name, name, thread)
        assert thread["policy"] in (os.SCHED_OTHER, os.SCHED_BATCH, os.SCHED_IDLE), (raise_name, name, thread)
        if "io" in thread:
            assert thread["io"] != 1, (raise_name, name, thread)


def test_an_ordinary_caller_keeps_its_own_threads_unchanged() -> None:
    """A positive nice (the caller's own choice to be lower) is kept, not raised to 0."""
    seen = _run_raised(["nice", "-n", "5"])
    for name in ("caller", "lookup", "proxy", "proxy_stat", "proxy_pool"):
        assert seen[name]["nice"] == 5, (name, seen[name])
        assert seen[name]["policy"] == os.SCHED_OTHER, (name, seen[name])
