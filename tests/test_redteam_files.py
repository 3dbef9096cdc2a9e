"""Red-team attacks on the file tools' confinement that no issue named, through the real runtime.

Each test is an attack a hostile agent or repository can mount; each failed
before its fix (see the commit that names it).
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Literal

import pytest

import shellrt
from tests.conftest import require

pytestmark = pytest.mark.anyio


def use(id_: str, name: str, **raw: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": id_, "name": name, "input": raw}


_SEQ = itertools.count()


def text(block: dict[str, Any]) -> str:
    content = block["content"]
    return content if isinstance(content, str) else "\n".join(c.get("text", "") for c in content)


async def one(rt: shellrt.Runtime, name: str, **raw: Any) -> dict[str, Any]:
    user = await rt.run([use(f"t{next(_SEQ)}", name, **raw)])  # an id names one call (round 19)
    block: dict[str, Any] = user["content"][0]
    return block


Backend = Literal["local", "bwrap"]


def sandbox_for(backend: Backend) -> Backend:
    if backend == "bwrap":
        require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    return backend


def runtime(tmp_path: Path, backend: Backend, mode: str = "bypassPermissions", **kw: Any) -> shellrt.Runtime:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    return shellrt.Runtime(
        workspace=ws, sandbox=sandbox_for(backend), mode=mode, session_dir=tmp_path / "session", settings_files=(), **kw
    )


@pytest.fixture
def host_dir() -> Any:
    """A host directory outside the workspace that the sandbox's user may traverse (0755)."""
    path = Path(tempfile.mkdtemp(prefix="shellrt-redteam-", dir="/var/tmp"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


async def test_root_only_file_is_not_read_with_roots_power(tmp_path: Path, host_dir: Path) -> None:
    """bwrap as root runs commands as an unprivileged uid: `cat` of a 0600 root file fails, so Read
    (in bypassPermissions, directly and through a symlink the sandbox made) must fail too."""
    if os.geteuid() != 0:
        pytest.skip("only a root caller's commands run under another uid")
    secret = host_dir / "root-only.txt"
    secret.write_text("ROOT-ONLY-SECRET\n")
    secret.chmod(0o600)
    (host_dir / "closed").mkdir(mode=0o700)
    (host_dir / "closed" / "open.txt").write_text("BEHIND-A-CLOSED-DIR\n")
    (host_dir / "closed" / "open.txt").chmod(0o644)
    (host_dir / "public.txt").write_text("PUBLIC\n")
    async with runtime(tmp_path, "bwrap") as rt:
        cat = await one(rt, "Bash", command=f"cat {secret} {host_dir}/closed/open.txt; ln -s {secret} lnk")
        direct = await one(rt, "Read", file_path=str(secret))
        linked = await one(rt, "Read", file_path="lnk")
        closed = await one(rt, "Read", file_path=f"{host_dir}/closed/open.txt")
        grep = await one(rt, "Grep", pattern="SECRET", path=str(secret), output_mode="content")
        public = await one(rt, "Read", file_path=str(host_dir / "public.txt"))
    assert "ROOT-ONLY-SECRET" not in text(cat) and "BEHIND" not in text(cat), text(cat)
    for result in (direct, linked, closed, grep):
        assert result["is_error"], text(result)
        assert "SECRET" not in text(result) and "BEHIND" not in text(result), text(result)
    assert "uid" in text(direct), text(direct)
    assert not public["is_error"] and "PUBLIC" in text(public), text(public)


async def test_bwrap_proc_dev_and_run_are_the_sandboxs_own(tmp_path: Path) -> None:
    """Commands see their own /proc, /dev and an emptied /run; Read must not serve the host's instead
    (shellrt's own /proc/<pid>/status, a host file under /run such as a mounted secret)."""
    planted: Path | None = None
    if os.geteuid() == 0 and os.path.isdir("/run"):
        planted = Path(f"/run/shellrt-redteam-{os.getpid()}.txt")
        planted.write_text("RUN-SECRET\n")
    try:
        async with runtime(tmp_path, "bwrap") as rt:
            await one(rt, "Bash", command=f"ln -s /proc/{os.getpid()}/status status.txt")
            results = [
                await one(rt, "Read", file_path="status.txt"),
                await one(rt, "Read", file_path=f"/proc/{os.getpid()}/status"),
                await one(rt, "Grep", pattern="PPid", path=f"/proc/{os.getpid()}/status"),
            ]
            if planted is not None:
                results.append(await one(rt, "Read", file_path=str(planted)))
                seen = await one(rt, "Bash", command=f"cat {planted}")
                assert "RUN-SECRET" not in text(seen), text(seen)
    finally:
        if planted is not None:
            planted.unlink()
    for result in results:
        assert result["is_error"], text(result)
        assert "PPid" not in text(result) and "RUN-SECRET" not in text(result), text(result)


@pytest.mark.parametrize("backend", ["local", "bwrap"])
async def test_a_fifo_is_never_opened(tmp_path: Path, backend: Backend) -> None:
    """A FIFO planted in the workspace: Read, Edit, Write and Grep refuse it without opening it
    (an open unblocks a writer waiting on the other end, and a device's open has side effects)."""
    async with runtime(tmp_path, backend) as rt:
        made = await one(rt, "Bash", command="mkfifo fifo.txt && echo made")
        assert "made" in text(made), text(made)
        await one(rt, "Bash", command="exec 3>fifo.txt; echo OPENED > marker", run_in_background=True)
        results = [
            await one(rt, "Read", file_path="fifo.txt"),
            await one(rt, "Edit", file_path="fifo.txt", old_string="a", new_string="b"),
            await one(rt, "Write", file_path="fifo.txt", content="x"),
            await one(rt, "Grep", pattern="a", path="fifo.txt"),
        ]
        await one(rt, "Grep", pattern="a")  # the directory walk passes the FIFO by
        await one(rt, "Glob", pattern="*")
        ws = tmp_path / "ws"
        opened = (ws / "marker").exists()
        # Release the waiting writer so the session closes promptly.
        fd = os.open(ws / "fifo.txt", os.O_RDONLY | os.O_NONBLOCK)
        os.close(fd)
    for result in results:
        assert result["is_error"], text(result)
    assert not opened, "a file tool opened the FIFO"


_SWAP_GREP = r"""
import anyio, ctypes, os, sys, threading
from pathlib import Path
import shellrt

libc = ctypes.CDLL(None, use_errno=True)
tmp, backend, mode, rounds = Path(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4])
ws, d = tmp / "ws", tmp / "ws" / "d"
d.mkdir(parents=True)
(d / "f.txt").write_text("needle\n")
os.mkfifo(tmp / "fifo")
stop = threading.Event()

def swap() -> None:  # what a background command can do: f.txt is a file, then a FIFO, then a file...
    while not stop.is_set():
        libc.renameat2(-100, os.fsencode(d / "f.txt"), -100, os.fsencode(tmp / "fifo"), 2)

async def main() -> None:
    threading.Thread(target=swap, daemon=True).start()
    gaps, calls, seq = [0.0], [0], [0]
    async with shellrt.Runtime(workspace=ws, sandbox=backend, mode="bypassPermissions",
                               session_dir=tmp / "s", settings_files=(), mask_defaults=False) as rt:
        async def grep_forever() -> None:
            while True:  # a fresh id per call: a resent id is answered from the transcript, not run
                seq[0] += 1
                call = {"type": "tool_use", "id": f"g{seq[0]}", "name": "Grep",
                        "input": {"pattern": "needle", "output_mode": mode}}
                await rt.run([call])
                calls[0] += 1

        async def heartbeat() -> None:
            last = anyio.current_time()
            while True:
                await anyio.sleep(0.1)
                now = anyio.current_time()
                gaps.append(now - last)
                last = now

        async with anyio.create_task_group() as tg:
            for _ in range(8):  # ripgrep itself may wait on the FIFO (a minute): keep others going
                tg.start_soon(grep_forever)
            tg.start_soon(heartbeat)
            await anyio.sleep(rounds)
            tg.cancel_scope.cancel()
    stop.set()
    print("MAX GAP", max(gaps), "CALLS", calls[0])

anyio.run(main)
"""


@pytest.mark.parametrize("backend", ["local", "bwrap"])
def test_grep_survives_a_file_swapped_for_a_fifo(tmp_path: Path, backend: Backend) -> None:
    """A matched file swapped for a FIFO after ripgrep saw it: Grep's binary check must not block
    (it ran a blocking open() on the event loop: the whole server hung, every session with it).
    Grep calls run for 5 s while the swap goes on; the event loop must keep ticking. (Before the
    fix a 1 s run hung, 5 of 5 tries, local and bwrap: 5 s keeps a wide margin, 20 s added none.)"""
    import subprocess
    import sys

    sandbox_for(backend)
    try:
        done = subprocess.run(
            [sys.executable, "-c", _SWAP_GREP, str(tmp_path), backend, "content", "5"],
            capture_output=True,
            text=True,
            timeout=120,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("Grep hung on a file swapped for a FIFO")
    assert "MAX GAP" in done.stdout, done.stderr[-2000:]
    gap, calls = float(done.stdout.split()[2]), int(done.stdout.split()[4])
    assert calls > 0 and gap < 10.0, done.stdout


_HUGE = r"""
import anyio, os, resource, sys
from pathlib import Path
import shellrt

tmp = Path(sys.argv[1])
ws = tmp / "ws"
ws.mkdir()
for name in ("huge.txt", "sub/huge.log", "huge.pdf"):
    path = ws / name
    path.parent.mkdir(exist_ok=True)
    with open(path, "wb") as fh:  # text first (Read shows it), then a 3 GB hole: no disk, all zeros
        fh.write(b"needle line\n" * 2000)
        fh.truncate(3 << 30)
resource.setrlimit(resource.RLIMIT_AS, (1536 << 20, resource.RLIM_INFINITY))

async def main() -> None:
    async with shellrt.Runtime(workspace=ws, sandbox="local", mode="bypassPermissions",
                               session_dir=tmp / "s", settings_files=()) as rt:
        for name, raw in (
            ("Grep", {"pattern": "needle", "path": "sub"}),
            ("Grep", {"pattern": "needle", "path": "huge.txt"}),
            ("Read", {"file_path": "huge.txt", "limit": 5}),
            ("Read", {"file_path": "huge.pdf"}),
            ("Edit", {"file_path": "huge.txt", "old_string": "needle", "new_string": "pin", "replace_all": True}),
            ("Write", {"file_path": "huge.txt", "content": "x"}),
        ):
            user = await rt.run([{"type": "tool_use", "id": "t" + str(abs(hash(repr(raw)))), "name": name, "input": raw}])
            block = user["content"][0]
            content = block["content"]
            body = content if isinstance(content, str) else " ".join(c.get("text", "") for c in content)
            print("RESULT", name, block["is_error"], body[:300].replace("\n", " "))
            if "Only the first" in body:
                print("Only the first 256 MiB")

anyio.run(main)
"""


def test_huge_sparse_file_costs_bounded_memory(tmp_path: Path) -> None:
    """A 3 GB sparse file planted in the repository (one `truncate` away): Grep's Python walker, Edit
    and Write read whole files into memory -- the host process (every session) pays, or dies. Under
    a 1.5 GB address-space limit each call must answer (an error that says what to do is fine)."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _HUGE, str(tmp_path)], capture_output=True, text=True, timeout=300
    )
    results = [line for line in done.stdout.splitlines() if line.startswith("RESULT")]
    assert len(results) == 6, (done.stdout, done.stderr[-3000:])
    assert "MemoryError" not in done.stdout + done.stderr, done.stdout
    grep_dir, grep_file, read, pdf, edit, write = results
    assert "RESULT Read False" in read and "needle line" in read, read
    assert "Only the first 256 MiB" in done.stdout, done.stdout  # not 3 GB of zeros hashed
    assert "RESULT Read True" in pdf and "pdftotext" in pdf, pdf
    for result in (edit, write):
        assert "too large" in result, result


@pytest.mark.parametrize("raw", ["a\x00b.txt", "lone\ud800surrogate.txt"])
async def test_unencodable_paths_are_error_results(tmp_path: Path, raw: str) -> None:
    """A NUL byte or a lone surrogate in a path cannot name a file: every file tool answers with an
    error result naming it (it raised out of the runtime: a tool_use without a tool_result)."""
    async with runtime(tmp_path, "local") as rt:
        results = [
            await one(rt, "Read", file_path=raw),
            await one(rt, "Write", file_path=raw, content="x"),
            await one(rt, "Edit", file_path=raw, old_string="", new_string="x"),
            await one(rt, "Glob", pattern="*.txt", path=raw),
            await one(rt, "Grep", pattern="x", path=raw),
        ]
    for result in results:
        assert result["is_error"], text(result)
    assert not any(p.name.startswith(("a", "lone")) for p in (tmp_path / "ws").iterdir())


@pytest.mark.parametrize("backend", ["local", "bwrap"])
async def test_grep_finds_matches_in_a_non_utf8_file_name(tmp_path: Path, backend: Backend) -> None:
    """A file name that is not UTF-8 (ripgrep's JSON gives it as bytes): its matches must not vanish
    (the name was decoded lossily, the binary check could not open it, the hit was dropped)."""
    async with runtime(tmp_path, backend, mask_defaults=False) as rt:
        await one(rt, "Bash", command="printf 'needle\\n' > $'bad\\xff.txt'")
        found = await one(rt, "Grep", pattern="needle", output_mode="content")
    assert not found["is_error"] and "needle" in text(found), text(found)


@pytest.mark.parametrize("backend", ["local", "bwrap"])
async def test_write_and_edit_drop_setuid_and_setgid(tmp_path: Path, backend: Backend) -> None:
    """A setuid/setgid executable in the workspace (planted, or checked out): Write or Edit puts the
    model's content in it. Writing a file clears those bits (the kernel does so for an unprivileged
    writer); the atomic replace copied them onto the new content instead -- as root, a model-written
    setuid-root program."""
    ws = tmp_path / "ws"
    ws.mkdir()
    for name in ("w.sh", "e.sh"):
        (ws / name).write_text("#!/bin/sh\necho old\n")
        os.chmod(ws / name, 0o6755)
    async with runtime(tmp_path, backend) as rt:
        for name in ("w.sh", "e.sh"):
            read = await one(rt, "Read", file_path=name)
            assert not read["is_error"], text(read)
        wrote = await one(rt, "Write", file_path="w.sh", content="#!/bin/sh\nid\n")
        edited = await one(rt, "Edit", file_path="e.sh", old_string="echo old", new_string="id")
    assert not wrote["is_error"] and not edited["is_error"], (text(wrote), text(edited))
    for name in ("w.sh", "e.sh"):
        mode = os.stat(ws / name).st_mode
        assert mode & 0o6000 == 0, oct(mode)
        assert mode & 0o777 == 0o755, oct(mode)  # the rest of the mode is kept


@pytest.mark.parametrize(
    "name",
    [".mcp.json", ".devcontainer.json", ".vscode/tasks.json", ".devcontainer/devcontainer.json",
     ".claude/hooks/on-start.sh", ".shellrt/anything.json", "sub/.login", ".mkshrc"],
)
async def test_file_tools_cannot_plant_what_commands_may_not(tmp_path: Path, name: str) -> None:
    """What the workspace guard reverts when a command plants it (obeyed later, outside the sandbox),
    Write in bypassPermissions planted unasked -- and a change between commands counts as the
    operator's, so the guard then accepted it. The file tools must ask (nobody here: refused)."""
    async with runtime(tmp_path, "local") as rt:
        wrote = await one(rt, "Write", file_path=name, content='{"mcpServers": {}}\n')
    assert wrote["is_error"], text(wrote)
    assert not (tmp_path / "ws" / name).exists()


@pytest.mark.parametrize("no_rg", [True, False])
async def test_search_as_root_finds_only_what_the_sandboxs_user_reads(
    tmp_path: Path, host_dir: Path, monkeypatch: pytest.MonkeyPatch, no_rg: bool
) -> None:
    """bwrap run as root, Grep/Glob over a readable host directory holding a 0700 one and a 0600 file:
    without ripgrep (not installed, or SHELLRT_NO_RIPGREP) the Python walker searched as root and
    returned what the sandbox's uid cannot read."""
    if os.geteuid() != 0:
        pytest.skip("only a root caller's commands run under another uid")
    if no_rg:
        monkeypatch.setenv("SHELLRT_NO_RIPGREP", "1")
    (host_dir / "closed").mkdir(mode=0o700)
    (host_dir / "closed" / "key.txt").write_text("SECRET-IN-CLOSED-DIR\n")
    (host_dir / "closed" / "key.txt").chmod(0o644)
    (host_dir / "private.txt").write_text("SECRET-PRIVATE-FILE\n")
    (host_dir / "private.txt").chmod(0o600)
    (host_dir / "public.txt").write_text("SECRET-NOT: public\n")
    async with runtime(tmp_path, "bwrap") as rt:
        grep = await one(rt, "Grep", pattern="SECRET", path=str(host_dir), output_mode="content")
        glob = await one(rt, "Glob", pattern="**/*.txt", path=str(host_dir))
    assert "public" in text(grep) and "public.txt" in text(glob), (text(grep), text(glob))
    assert "CLOSED" not in text(grep) and "PRIVATE" not in text(grep), text(grep)
    assert "key.txt" not in text(glob), text(glob)  # private.txt's name is visible to commands too


@pytest.mark.parametrize("backend", ["local", "bwrap"])
async def test_write_through_a_hard_link_never_changes_the_outside_file(tmp_path: Path, backend: Backend) -> None:
    """A hard link in the workspace to a file outside it (`git clone --local` makes them; a command
    may where protected_hardlinks allows): Write and Edit replace the link, never the outside inode."""
    outside = tmp_path / "outside.txt"
    outside.write_text("ORIGINAL\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    os.link(outside, ws / "hl.txt")
    os.link(outside, ws / "hl2.txt")
    async with runtime(tmp_path, backend) as rt:
        await one(rt, "Read", file_path="hl.txt")
        wrote = await one(rt, "Write", file_path="hl.txt", content="CHANGED\n")
        await one(rt, "Read", file_path="hl2.txt")
        edited = await one(rt, "Edit", file_path="hl2.txt", old_string="ORIGINAL", new_string="EDITED")
    assert not wrote["is_error"] and not edited["is_error"], (text(wrote), text(edited))
    assert outside.read_text() == "ORIGINAL\n"
    assert (ws / "hl.txt").read_text() == "CHANGED\n" and (ws / "hl2.txt").read_text() == "EDITED\n"


async def test_bwrap_as_root_tools_act_as_the_workspace_owner(tmp_path: Path) -> None:
    """bwrap run as root, a workspace owned by a user: commands see it through an idmapped mount
    (its owner is the sandbox uid), so what they create lands owned by that user, and another
    user's 0600 file in it is closed to them. The tools made root-owned files in the user's repo
    (the user could no longer change them) and read the other user's private file."""
    if os.geteuid() != 0:
        pytest.skip("only a root caller's commands run under another uid")
    ws = tmp_path / "ws"
    ws.mkdir()
    os.chown(ws, 1234, 1234)
    other = ws / "other-user.txt"
    other.write_text("OTHER-USERS-SECRET\n")
    os.chown(other, 4321, 4321)
    other.chmod(0o600)
    async with runtime(tmp_path, "bwrap") as rt:
        made = await one(rt, "Bash", command="echo x > by-command.txt; cat other-user.txt")
        wrote = await one(rt, "Write", file_path="sub/by-tool.txt", content="y\n")
        read = await one(rt, "Read", file_path="other-user.txt")
    assert "OTHER-USERS-SECRET" not in text(made), text(made)
    assert not wrote["is_error"], text(wrote)
    assert os.stat(ws / "by-command.txt").st_uid == 1234
    assert os.stat(ws / "sub" / "by-tool.txt").st_uid == 1234 and os.stat(ws / "sub").st_uid == 1234
    assert read["is_error"] and "OTHER-USERS-SECRET" not in text(read), text(read)
