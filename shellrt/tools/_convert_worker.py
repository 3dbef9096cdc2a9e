"""Converting a page's HTML in a worker process that is killed at the call's deadline.

Why: round 19 left the conversion in a host thread, checked against the deadline only
between slices; one slice could still run past it or take hundreds of megabytes of the
host's memory (`shellrt.tools._convert_child`). A process is the unit the host can stop
and bound. Starting one costs ~100 ms, so idle workers are kept (at most `MAX_IDLE`) and
reused: a page pays only the pipe. A worker that overran the deadline, failed, or answered
out of bounds is killed and replaced in the background.

A worker runs the host's Python with ``-I`` (no environment variables, no user site, no
current directory on the path) from ``/``, with the parent's absolute import paths only:
a hostile workspace's ``html2text.py`` is never imported. Before its first page it loads a
seccomp allow list (`shellrt.tools._convert_child`); one that cannot ends with
`UNCONFINED_STATUS`, and the page fails with a message saying so (no other worker is started).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

from shellrt.tools._convert_child import UNCONFINED_STATUS
from shellrt.tools._fair_slots import FairSlots
from shellrt.tools._hostchild import calm_argv

__all__ = [
    "MAX_BUSY",
    "MAX_IDLE",
    "PER_SESSION_BUSY",
    "SLOT_SECONDS",
    "WORKER_MEMORY_BYTES",
    "Outcome",
    "convert_html",
    "prestart",
    "shutdown",
]

#: Address space of one worker (`RLIMIT_AS`): a page's text is at most a few tens of MB (10 MB
#: pages of text, tags, one attribute, CJK convert under it; measured round 20).
WORKER_MEMORY_BYTES = 512 * 1024 * 1024
#: Idle workers kept for the next page.
MAX_IDLE = 2
#: Workers converting at once in this process, whatever the number of sessions (each may take
#: `WORKER_MEMORY_BYTES`); a page waits for one within its own deadline.
MAX_BUSY = 4
#: Workers one session may hold at once (its tool runs at most 2 conversions too).
PER_SESSION_BUSY = 2
#: Seconds one page may hold a worker: with slots handed to the waiting session that holds the
#: fewest (`_fair_slots`), no session waits much longer than this for one, whatever others fetch
#: (round 37). Ordinary pages take well under a second: the converter stops at ``max_chars``.
SLOT_SECONDS = 10.0
#: Seconds past the deadline a worker may take to send what it converted before it is killed
#: (it checks the deadline itself between slices and answers then).
KILL_GRACE_S = 0.2
#: The largest answer read from a worker: its text is bounded by ``max_chars`` (JSON escapes
#: may take six bytes a character).
_ANSWER_SLACK = 64 * 1024
_UNCONFINED = (
    "the converter process could not load its seccomp filter (it needs Linux with seccomp on "
    "x86_64 or aarch64), so it parses no page; fetch the page as raw text instead, or run "
    "shellrt where seccomp is available"
)


@dataclass(frozen=True)
class Outcome:
    """A worker's answer: the text and note, or ``error`` (``memory``, ``deadline``, ``slot``,
    ``busy``, ``failed``)."""

    text: str = ""
    note: str = ""
    error: str = ""
    message: str = ""
    cpu_s: float = 0.0
    #: The text is all the page converts to under the caps, not cut short by the deadline: cacheable.
    lasting: bool = False


class _Broken(Exception):
    """The worker died or answered out of bounds."""


def _ready(fd: int, event: int, timeout_s: float) -> bool:
    """Whether ``fd`` is ready (or hung up) within ``timeout_s``: poll, as a host process's fds
    may number past select's 1024."""
    poller = select.poll()
    poller.register(fd, event)
    return bool(poller.poll(max(1, int(timeout_s * 1000))))


class _Worker:
    def __init__(self) -> None:
        paths = [p for p in sys.path if os.path.isabs(p)]
        boot = (
            "import sys, json; sys.path[:0] = json.loads(sys.argv[2]); "
            "from shellrt.tools._convert_child import main; main()"
        )
        self.proc = subprocess.Popen(
            calm_argv([sys.executable, "-I", "-c", boot, str(WORKER_MEMORY_BYTES), json.dumps(paths)]),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd="/",
            close_fds=True,
            env={},  # the host's environment holds keys and tokens; the worker needs none of it
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin = self.proc.stdin.fileno()
        self.stdout = self.proc.stdout.fileno()
        os.set_blocking(self.stdin, False)
        os.set_blocking(self.stdout, False)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass

    def close(self) -> None:
        """Let an idle worker end by itself (stdin's end), else kill it."""
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            self.proc.wait(timeout=2)
        except (OSError, subprocess.TimeoutExpired):
            pass
        self.kill()

    def _write(self, data: bytes, until: float) -> None:
        view = memoryview(data)
        while view:
            left = until - time.monotonic()
            if left <= 0:
                raise TimeoutError
            if _ready(self.stdin, select.POLLOUT, left):
                try:
                    view = view[os.write(self.stdin, view) :]
                except BlockingIOError:
                    continue
                except OSError as exc:
                    raise _Broken(str(exc)) from None

    def _read(self, size: int, until: float) -> bytes:
        data = bytearray()
        while len(data) < size:
            left = until - time.monotonic()
            if left <= 0:
                raise TimeoutError
            if _ready(self.stdout, select.POLLIN, left):
                try:
                    chunk = os.read(self.stdout, size - len(data))
                except BlockingIOError:
                    continue
                if not chunk:
                    raise _Broken("the converter process ended")
                data += chunk
        return bytes(data)

    def convert(self, html: str, url: str, deadline: float, max_chars: int) -> Outcome:
        """One page; raises TimeoutError past ``deadline`` + grace, `_Broken` on a bad answer."""
        until = deadline + KILL_GRACE_S
        head = json.dumps({"url": url, "deadline": deadline, "max_chars": max_chars}).encode()
        body = html.encode("utf-8", "surrogatepass")
        self._write(struct.pack(">I", len(head)) + head + struct.pack(">Q", len(body)), until)
        self._write(body, until)
        del body
        size = struct.unpack(">I", self._read(4, until))[0]
        if size > 6 * max_chars + _ANSWER_SLACK:
            raise _Broken(f"an answer of {size} bytes")
        try:
            answer = json.loads(self._read(size, until).decode("utf-8", "surrogatepass"))
            return Outcome(
                text=str(answer.get("text", ""))[:max_chars],
                note=str(answer.get("note", "")),
                error=str(answer.get("error", "")),
                message=str(answer.get("message", "")),
                cpu_s=float(answer.get("cpu", 0.0)),
                lasting=answer.get("lasting") is True,
            )
        except (ValueError, AttributeError, TypeError) as exc:
            raise _Broken(f"a malformed answer ({exc})") from None


_lock = threading.Lock()
_idle: list[_Worker] = []
_slots = FairSlots(MAX_BUSY, PER_SESSION_BUSY)
_starting = 0


def _checkout() -> _Worker:
    with _lock:
        while _idle:
            worker = _idle.pop()
            if worker.alive():
                return worker
            worker.kill()
    return _Worker()


def _checkin(worker: _Worker) -> None:
    with _lock:
        if worker.alive() and len(_idle) < MAX_IDLE:
            _idle.append(worker)
            return
    worker.close()


def prestart() -> None:
    """Start a worker for the next page off the caller's thread, unless one is idle or starting:
    WebFetch calls it when a fetch begins (the start overlaps the download), and a killed
    worker's successor starts so."""
    global _starting
    with _lock:
        if len(_idle) + _starting >= 1:
            return
        _starting += 1

    def start() -> None:
        global _starting
        try:
            worker = _Worker()
        except OSError:
            return
        finally:
            with _lock:
                _starting -= 1
        _checkin(worker)

    threading.Thread(target=start, name="shellrt-convert-start", daemon=True).start()


def convert_html(html: str, url: str, *, deadline: float, max_chars: int, session: str = "") -> Outcome:
    """Convert ``html`` in a worker; blocking (call it from a worker thread).

    Waits for a worker of the process's `MAX_BUSY` as ``session``'s (fairly: `_fair_slots`), and
    holds it at most `SLOT_SECONDS`. Never runs past ``deadline`` by more than `KILL_GRACE_S`
    (and the time a kill takes)."""
    if not _slots.acquire(session, deadline - time.monotonic()):
        return Outcome(error="busy")
    try:
        slot_end = time.monotonic() + SLOT_SECONDS
        if slot_end < deadline:
            outcome = _convert(html, url, slot_end, max_chars)
            return Outcome(error="slot") if outcome.error == "deadline" else outcome
        return _convert(html, url, deadline, max_chars)
    finally:
        _slots.release(session)


def _convert(html: str, url: str, deadline: float, max_chars: int) -> Outcome:
    try:
        worker = _checkout()
    except OSError as exc:
        return Outcome(error="failed", message=f"the converter process could not start: {exc}")
    try:
        outcome = worker.convert(html, url, deadline, max_chars)
    except TimeoutError:
        worker.kill()
        prestart()
        return Outcome(error="deadline")
    except _Broken as exc:
        with contextlib.suppress(subprocess.TimeoutExpired):  # its status, if it is ending
            worker.proc.wait(timeout=KILL_GRACE_S)
        code = worker.proc.poll()
        worker.kill()
        if code == UNCONFINED_STATUS:
            return Outcome(error="failed", message=_UNCONFINED)
        prestart()
        # A worker ended by its address-space limit dies of an uncaught MemoryError or SIGKILL/SEGV.
        return Outcome(error="failed", message=f"{exc} (exit status {code})")
    _checkin(worker)
    return outcome


def shutdown() -> None:
    """End the idle workers (at exit; tests)."""
    with _lock:
        workers = list(_idle)
        _idle.clear()
    for worker in workers:
        worker.close()


atexit.register(shutdown)
