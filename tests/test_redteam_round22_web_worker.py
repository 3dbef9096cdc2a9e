"""Red team round 22 (web): the HTML converter worker ran attacker code with the host's full reach.

The worker (`shellrt.tools._convert_child`) parses a page the attacker chose, with html.parser and
html2text, in a process on the host that runs as the caller (root in CI) with only resource
limits. CPython has had bugs in that code (CVE-2025-6069, quadratic; memory-safety bugs in its
string and parser code are the next step): code that runs there ran as the host. These tests
stand in for such a bug with a planted ``html2text`` (the worker imports it from the parent's
paths, as it would the real one) whose ``feed`` runs the attack when it sees the page's marker:
it is called exactly where the real parser is, after everything the worker does to get ready.
Before: it connected to a server on 127.0.0.1, created and truncated files, read a file, forked,
spawned a program, sent its parent a signal, attached to it with ptrace and read its memory.
Now every one of those fails with EPERM: the worker loads a seccomp allow list before it reads
a page (`sandbox/_seccomp_worker.py`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from sandbox import _seccomp_worker
from sandbox._seccomp import FIRST_UNKNOWN, MACHINES
from shellrt.tools import _convert_worker
from tests.test_bwrap_seccomp_program import run

_ROOT = Path(__file__).resolve().parents[1]

#: The planted module: html2text's interface as `_web_text.html_to_markdown` uses it, and an attack.
_PLANTED = textwrap.dedent(
    """
    import ctypes, errno, json, os, socket

    _libc = ctypes.CDLL(None, use_errno=True)


    class _Iovec(ctypes.Structure):
        _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


    def _errno(exc):
        return errno.errorcode.get(exc.errno, str(exc.errno))


    def _call(result):
        return "ok" if result >= 0 else errno.errorcode.get(ctypes.get_errno(), "?")


    def _connect(port):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.connect(("127.0.0.1", port))
            s.sendall(b"from the converter")


    def _unix():
        socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).close()


    def _create(path):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))


    def _truncate(path):
        os.close(os.open(path, os.O_WRONLY | os.O_TRUNC))


    def _read(path):
        with open(path) as f:
            return "read:" + f.read()


    def _fork():
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)


    def _spawn(marker):
        pid = os.posix_spawn("/bin/sh", ["sh", "-c", "echo spawned > " + marker], {})
        os.waitpid(pid, 0)


    def _vm_read(pid, address, size):
        buf = ctypes.create_string_buffer(size)
        local, remote = _Iovec(ctypes.addressof(buf), size), _Iovec(address, size)
        got = _libc.process_vm_readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
        return "read:" + buf.raw.decode() if got == size else errno.errorcode.get(ctypes.get_errno(), "?")


    def _attack(a):
        host, parent = a["host"], os.getppid()  # the host process; the worker (now a fork server)
        probes = {
            "connect": lambda: _connect(a["port"]),
            "unix_socket": _unix,
            "create": lambda: _create(a["created"]),
            "truncate": lambda: _truncate(a["victim"]),
            "read": lambda: _read(a["secret"]),
            "read_host_environ": lambda: _read("/proc/%d/environ" % host)[:5],
            "execve": lambda: os.execv("/nonexistent/shellrt-probe", ["probe"]),
            "fork": _fork,
            "spawn": lambda: _spawn(a["marker"]),
            "kill_host": lambda: os.kill(host, 0),
            "kill_parent": lambda: os.kill(parent, 0),
            "ptrace_host": lambda: _call(_libc.ptrace(0x4206, host, None, None)),  # PTRACE_SEIZE
            "ptrace_parent": lambda: _call(_libc.ptrace(0x4206, parent, None, None)),
            "vm_read_host": lambda: _vm_read(host, a["address"], a["size"]),
        }
        out = {}
        for name, probe in probes.items():
            try:
                result = probe()
                out[name] = "ok" if result is None else result
            except OSError as exc:
                out[name] = _errno(exc)
        return out


    _SEEN = []


    class HTML2Text:
        def __init__(self, baseurl=""):
            self.rawdata = ""
            self.outtextlist = []
            self.result = ""

        def feed(self, data):
            if "ATTACK " in data:
                self.result = json.dumps(_attack(json.loads(data.split("ATTACK ", 1)[1])))
            elif "ENVIRON" in data:  # no call needed: the environment is in the process's memory
                self.result = json.dumps(dict(os.environ))
            elif "REMEMBER" in data:  # what stays in the process for the next page
                _SEEN.append(data)
                self.result = "remembered"
            elif "RECALL" in data:
                self.result = json.dumps(_SEEN)
            elif "SPIN" in data:  # runs on past the host's deadline
                while True:
                    pass

        def outtextf(self, s):
            pass

        def finish(self):
            return self.result

        def optwrap(self, text):
            return text
    """
)

#: The host side: a server on 127.0.0.1, a secret in its memory, and one page through the worker.
_HOST = textwrap.dedent(
    """
    import ctypes, json, os, socket, sys, threading, time
    import psutil
    from shellrt.tools import _convert_worker

    args = json.loads(sys.argv[1])
    os.environ["SHELLRT_R22_API_KEY"] = "sk-host-secret"  # what a host process's environment holds
    server = socket.create_server(("127.0.0.1", 0))
    accepted = []

    def serve():
        while True:
            conn, _ = server.accept()
            accepted.append(conn.recv(100).decode())
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    secret = ctypes.create_string_buffer(b"host-secret-in-memory")
    args.update(port=server.getsockname()[1], address=ctypes.addressof(secret), size=21, host=os.getpid())
    texts = []
    pages = args.pop("pages")
    deadlines = args.pop("deadlines", [60] * len(pages))
    watched = []  # the process that is to convert the page (the worker forks it before the page)
    for page, deadline in zip(pages, deadlines):
        if args.get("watch") and texts:
            until = time.monotonic() + 60
            while not watched and time.monotonic() < until:
                for worker in psutil.Process().children():
                    watched += worker.children()[:1]
                time.sleep(0.01)
        page = page.replace("ARGS", json.dumps(args))
        done = _convert_worker.convert_html(page, "http://page.test/",
                                            deadline=time.monotonic() + deadline,
                                            max_chars=100_000)
        texts.append(done.text if not done.error else "error: " + done.error)
    time.sleep(0.2)  # the server thread records what connected (it had connected before the answer)
    _gone, alive = psutil.wait_procs(watched, timeout=10)
    for process in alive:
        process.kill()
    print(json.dumps({"texts": texts, "accepted": accepted, "watched": len(watched),
                      "outlived": [p.pid for p in alive]}))
    """
)


def _host(tmp_path: Path, pages: list[str], files: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run the host side with the planted parser over ``pages`` (``ARGS`` in a page: the files,
    the server's port, the secret's address)."""
    planted = tmp_path / "planted"
    planted.mkdir()
    (planted / "html2text.py").write_text(_PLANTED)
    host = tmp_path / "host.py"
    host.write_text(_HOST)
    paths = [str(planted), str(_ROOT), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, paths))}
    args = {"pages": pages, **{k: str(v) if isinstance(v, Path) else v for k, v in (files or {}).items()}}
    done = subprocess.run(
        [sys.executable, str(host), json.dumps(args)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    answer: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return answer


def _attack(tmp_path: Path) -> tuple[dict[str, str], dict[str, Any], dict[str, Path]]:
    files = {
        "created": tmp_path / "created",
        "victim": tmp_path / "victim",
        "secret": tmp_path / "secret",
        "marker": tmp_path / "spawned",
    }
    files["victim"].write_text("the operator's file")
    files["secret"].write_text("host secret on disk")
    answer = _host(tmp_path, ["<p>ATTACK ARGS"], files)
    return json.loads(answer["texts"][0]), answer, files


def test_code_run_by_the_converter_reaches_nothing_of_the_host(tmp_path: Path) -> None:
    probes, answer, files = _attack(tmp_path)
    # Before (as root and as uid 65534): every probe "ok" (execve: ENOENT, the call was made),
    # the host's memory and the file on disk read, a connection accepted, a file created, the
    # victim emptied, a program spawned.
    reached = {name: result for name, result in probes.items() if result != "EPERM"}
    assert not reached, f"code in the converter worker reached: {reached}"
    assert len(probes) == 14, probes
    assert answer["accepted"] == [], "the worker connected to a server on 127.0.0.1"
    assert not files["created"].exists(), "the worker created a file"
    assert files["victim"].read_text() == "the operator's file", "the worker truncated a file"
    assert not files["marker"].exists(), "the worker spawned a program"


def _status(pid: int) -> dict[str, str]:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return {k: v.strip() for k, _, v in (line.partition(":") for line in lines)}


def test_the_worker_is_confined_before_its_first_page_and_still_converts() -> None:
    _convert_worker.shutdown()
    done = _convert_worker.convert_html(
        "<h1>Title</h1><p>Some <b>text</b> and <a href='/x'>a link</a>.</p>",
        "http://page.test/",
        deadline=time.monotonic() + 60,
        max_chars=10_000,
    )
    assert not done.error, done
    assert "# Title" in done.text and "[a link](http://page.test/x)" in done.text, done.text
    with _convert_worker._lock:
        worker = _convert_worker._idle[-1]
    status = _status(worker.proc.pid)
    assert status["Seccomp"] == "2", status["Seccomp"]  # SECCOMP_MODE_FILTER
    assert status["NoNewPrivs"] == "1"
    # What it holds: its two pipes and stderr, nothing it opened on the way.
    assert sorted(os.listdir(f"/proc/{worker.proc.pid}/fd")) == ["0", "1", "2"]
    _convert_worker.shutdown()


_AUDIT = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_ALLOW, _EPERM, _KILL = 0x7FFF0000, 0x00050000 | 1, 0x80000000


@pytest.mark.parametrize("fork_server", [False, True])
@pytest.mark.parametrize("machine", sorted(MACHINES))
def test_the_filter_allows_its_list_and_nothing_else(machine: str, fork_server: bool) -> None:
    """Every number, known or not: the listed calls pass, any other fails with EPERM; another
    architecture's table and x32 kill the process. A fork server's ``clone`` passes with fork's
    flags only, its ``prctl`` with the two listed options only."""
    prog = _seccomp_worker.filter_bytes(machine, fork_server=fork_server)
    arch = MACHINES[machine]
    allowed = {numbers[arch] for numbers in _seccomp_worker.ALLOWED.values()}
    assert len(allowed) == len(_seccomp_worker.ALLOWED)
    extra = {name: numbers[arch] for name, numbers in _seccomp_worker.FORK_SERVER.items()}
    if fork_server:
        allowed |= set(extra.values()) - {extra["clone"], extra["prctl"]}
        fork = _seccomp_worker.FORK_FLAGS
        clones = {
            fork: _ALLOW,
            fork | 0x10000000: _EPERM,  # CLONE_NEWUSER
            fork | 0x40000000: _EPERM,  # CLONE_NEWNET
            fork | 0x00010000: _EPERM,  # CLONE_THREAD
            0x00000011: _EPERM,  # SIGCHLD alone: not glibc's fork
            fork | 1 << 32: _EPERM,  # the high half counts too
        }
        for flags, want in clones.items():
            assert run(prog, extra["clone"], _AUDIT[machine], (flags,))[0] == want, hex(flags)
        for option in range(70):
            want = _ALLOW if option in _seccomp_worker.FORK_SERVER_PRCTL else _EPERM
            assert run(prog, extra["prctl"], _AUDIT[machine], (option,))[0] == want, option
        skip = {extra["clone"], extra["prctl"]}
    else:
        assert not allowed & set(extra.values())
        skip = set()
    for nr in [*range(FIRST_UNKNOWN + 64), 0x3FFFFFFF, 0x40000000, 0xFFFFFFFF]:
        if nr in skip or nr == _seccomp_worker.ALLOWED["madvise"][arch]:
            continue
        want = _ALLOW if nr in allowed else _EPERM
        if machine == "x86_64" and nr >= 0x40000000:
            want = _KILL  # x32's numbers
        got = run(prog, nr, _AUDIT[machine], 0)[0]
        assert got == want, (machine, nr, hex(got))
    madvise = _seccomp_worker.ALLOWED["madvise"][arch]
    for advice in range(128):
        want = _ALLOW if advice in _seccomp_worker.MADVISE_ADVICE else _EPERM
        assert run(prog, madvise, _AUDIT[machine], (0, 4096, advice))[0] == want, advice
    assert run(prog, madvise, _AUDIT[machine], (0, 4096, 4 | 1 << 32))[0] == _EPERM
    other = next(a for m, a in _AUDIT.items() if m != machine)
    assert run(prog, 0, other, 0)[0] == _KILL
    # What the attack used, by number: none is on the list.
    refused = {
        "x86_64": (257, 41, 42, 59, 56, 57, 101, 62, 310),
        "aarch64": (56, 198, 203, 221, 220, 129, 117, 270),
    }
    assert not allowed & set(refused[machine])


def test_a_page_finds_nothing_of_the_host_in_the_worker_s_memory(tmp_path: Path) -> None:
    """Before: the worker inherited the host's environment (API keys, tokens): code run by a
    page read it without a single call and returned it as the page's text, for the model to
    see and, prompted by the same page, send on."""
    environ = json.loads(_host(tmp_path, ["<p>ENVIRON"])["texts"][0])
    assert "SHELLRT_R22_API_KEY" not in environ, environ
    assert "sk-host-secret" not in json.dumps(environ)


def test_a_page_leaves_nothing_behind_for_the_next_one(tmp_path: Path) -> None:
    """Before: one worker served page after page (of every session in the host process), so code
    run by one page stayed there and saw, or rewrote, every later page. Now each page has a
    process of its own, forked from the worker that never reads a page."""
    texts = _host(tmp_path, ["<p>REMEMBER the first page", "<p>REMEMBER the second page", "<p>RECALL"])[
        "texts"
    ]
    assert texts[:2] == ["remembered", "remembered"], texts
    assert json.loads(texts[2]) == [], f"a later page saw what earlier pages left: {texts[2]}"


def test_a_page_s_process_ends_with_the_worker_at_the_deadline(tmp_path: Path) -> None:
    """The host kills the worker at the deadline; the page's process, its child, dies with it
    (``PR_SET_PDEATHSIG``) instead of running on, unseen, on the host's CPU."""
    # The first page starts the worker (which forks the next page's process before it comes).
    answer = _host(tmp_path, ["<p>warm", "<p>SPIN"], {"deadlines": [60, 1], "watch": True})
    assert answer["texts"] == ["", "error: deadline"], answer
    assert answer["watched"] == 1, "the page's process was not seen"
    assert answer["outlived"] == [], "a page's process outlived its worker (killed now)"
