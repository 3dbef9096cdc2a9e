"""The file tools held to the sandbox's boundary, through the real runtime on local, bwrap and docker.

Each attack of issue 18 as a test: a write outside in bypassPermissions, a write
and a read through a symlink the sandbox itself created, a symlink-swap race
against Write; and the docker session of issue 16 item 3 (one view for every
tool, container paths everywhere, permissions judged in the container's view).
"""

from __future__ import annotations

import ctypes
import itertools
import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest

import shellrt
from sandbox import DockerConfig, SandboxPolicy
from tests._docker_support import BUSYBOX, DEBIAN, require_docker
from tests.conftest import require

pytestmark = pytest.mark.anyio

BACKENDS = ["local", "bwrap", "docker"]
_SEQ = itertools.count()


def use(id_: str, name: str, **raw: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": id_, "name": name, "input": raw}


def text(block: dict[str, Any]) -> str:
    content = block["content"]
    return content if isinstance(content, str) else "\n".join(c.get("text", "") for c in content)


async def one(rt: shellrt.Runtime, id_: str, name: str, **raw: Any) -> dict[str, Any]:
    """One call; ``id_`` gets a sequence number (an id names one call in a session, round 19)."""
    user = await rt.run([use(f"{id_}-{next(_SEQ)}", name, **raw)])
    block: dict[str, Any] = user["content"][0]
    return block


_libc = ctypes.CDLL(None, use_errno=True)
_AT_FDCWD, _RENAME_EXCHANGE = -100, 2


def exchange(a: Path, b: Path) -> None:
    """Atomically swap two directory entries (whatever they are)."""
    if _libc.renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), str(a))


def sandbox_for(backend: str, image: str = BUSYBOX) -> Any:
    if backend == "bwrap":
        require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
        return "bwrap"
    if backend == "docker":
        require_docker()
        return DockerConfig(image=image)
    return "local"


def runtime(tmp_path: Path, backend: str, mode: str, **kw: Any) -> shellrt.Runtime:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    return shellrt.Runtime(
        workspace=ws,
        sandbox=sandbox_for(backend, kw.pop("image", BUSYBOX)),
        mode=mode,
        session_dir=tmp_path / "session",
        settings_files=(),
        **kw,
    )


@pytest.mark.parametrize("backend", BACKENDS)
async def test_write_outside_refused_in_bypass_mode(tmp_path: Path, backend: str) -> None:
    target = f"/etc/shellrt-confine-{os.getpid()}-{backend}"
    async with runtime(tmp_path, backend, "bypassPermissions") as rt:
        result = await one(rt, "w", "Write", file_path=target, content="x")
    assert result["is_error"] and target in text(result), text(result)
    assert not os.path.exists(target)


@pytest.mark.parametrize("backend", BACKENDS)
async def test_symlink_made_by_the_sandbox_leads_nowhere(tmp_path: Path, backend: str) -> None:
    """``ln -s /host/dir lnk`` run by the model: Write lnk/x and Read lnk/fake_key are refused."""
    host = tmp_path / "hostdir"
    host.mkdir()
    (host / "fake_key").write_text("HOST-SECRET\n")
    # local has no isolation of its own: the host directory is a read-denied path of the policy.
    extra: dict[str, Any] = {}
    if backend == "local":
        extra["policy"] = SandboxPolicy(workspace=(tmp_path / "ws"), read_denied=(host,))
        (tmp_path / "ws").mkdir()
    async with runtime(tmp_path, backend, "bypassPermissions", **extra) as rt:
        made = await one(rt, "ln", "Bash", command=f"ln -s {host} lnk && echo made")
        assert "made" in text(made), text(made)
        wrote = await one(rt, "w", "Write", file_path="lnk/x", content="planted")
        read = await one(rt, "r", "Read", file_path="lnk/fake_key")
        seen = await one(rt, "c", "Bash", command="cat lnk/x")
    if backend == "bwrap" and not wrote["is_error"]:
        # bwrap's /tmp is private: lnk leads into the sandbox's own /tmp, where the file tools
        # wrote what a command would have written — exactly where the result says, never on the host.
        assert "planted" in text(seen), (text(wrote), text(seen))
    else:
        assert wrote["is_error"] and "lnk/x" in text(wrote), text(wrote)
    assert read["is_error"] and "lnk/fake_key" in text(read) and "HOST-SECRET" not in text(read), text(read)
    assert sorted(p.name for p in host.iterdir()) == ["fake_key"]


@pytest.mark.parametrize("backend", ["bwrap"])
async def test_symlink_to_a_read_only_host_dir_refused(tmp_path: Path, backend: str) -> None:
    """On bwrap the host root is read-only: Write through a link to a visible host dir is refused."""
    host = Path(tempfile.mkdtemp(prefix="shellrt-confine-", dir="/var/tmp"))
    try:
        async with runtime(tmp_path, backend, "bypassPermissions") as rt:
            await one(rt, "ln", "Bash", command=f"ln -s {host} lnk")
            wrote = await one(rt, "w", "Write", file_path="lnk/x", content="planted")
        assert wrote["is_error"] and "lnk/x" in text(wrote) and "writable" in text(wrote), text(wrote)
        assert list(host.iterdir()) == []
    finally:
        shutil.rmtree(host)


@pytest.mark.slow  # 26 s (bwrap) in CI56: its file is handed out first (tests/conftest.py)
@pytest.mark.parametrize(
    ("backend", "mode"), [("local", "acceptEdits"), ("local", "bypassPermissions"), ("bwrap", "acceptEdits")]
)
async def test_symlink_swap_race_against_write(tmp_path: Path, backend: str, mode: str) -> None:
    """A loop swaps d between a directory and a symlink to a host dir; 300 Writes to d/.

    (bwrap in bypassPermissions may legitimately write through the link into the sandbox's private
    /tmp — see test_symlink_made_by_the_sandbox_leads_nowhere — so it is not asserted here.)
    """
    outside = tmp_path / "outside"
    outside.mkdir()
    ws = tmp_path / "ws"
    (ws / "d").mkdir(parents=True)
    stop = threading.Event()

    (ws / "d.link").symlink_to(outside)

    def swap() -> None:
        # renameat2(RENAME_EXCHANGE): d is always there, atomically a directory or a symlink to outside.
        while not stop.is_set():
            exchange(ws / "d", ws / "d.link")
        if (ws / "d").is_symlink():
            exchange(ws / "d", ws / "d.link")

    results: list[dict[str, Any]] = []
    async with runtime(tmp_path, backend, mode) as rt:
        swapper = threading.Thread(target=swap)
        swapper.start()
        try:
            for n in range(300):
                results.append(await one(rt, f"w{n}", "Write", file_path=f"d/race_{n}.txt", content=f"{n}\n"))
        finally:
            stop.set()
            swapper.join()
    assert list(outside.iterdir()) == [], "nothing lands outside the workspace"
    assert not [p for p in ws.rglob("*") if p.name.endswith(".tmp")], "no temp file left behind"
    assert (ws / "d").is_dir() and not (ws / "d").is_symlink()
    successes = 0
    for n, result in enumerate(results):
        if result["is_error"]:
            assert f"d/race_{n}.txt" in text(result), text(result)
            continue
        successes += 1
        said = text(result).split("at: ", 1)[1].split(" (", 1)[0]
        assert said == str(ws / "d" / f"race_{n}.txt") and Path(said).read_text() == f"{n}\n", text(result)
    assert successes > 0


@pytest.mark.parametrize("image", [BUSYBOX, DEBIAN])
async def test_docker_session_one_view(tmp_path: Path, image: str) -> None:
    """Headless default mode runs read-only commands; acceptEdits writes land in /workspace; container
    paths in every result; the host is unreachable."""
    async with runtime(tmp_path, "docker", "default", image=image) as rt:
        echo = await one(rt, "e", "Bash", command="echo hi")
        assert not echo["is_error"] and text(echo).strip() == "hi", text(echo)
        ls = await one(rt, "l", "Bash", command="ls")
        assert not ls["is_error"], text(ls)
    async with runtime(tmp_path, "docker", "acceptEdits", image=image, allow=("Bash",)) as rt:
        wrote = await one(rt, "w", "Write", file_path="a.txt", content="from Write\n")
        assert not wrote["is_error"] and "/workspace/a.txt" in text(wrote), text(wrote)
        assert str(tmp_path) not in text(wrote)
        seen = await one(rt, "c", "Bash", command="cat /workspace/a.txt")
        assert "from Write" in text(seen), text(seen)
        # What the tools create belongs to the container's user: commands can keep working on it.
        deep = await one(rt, "w2", "Write", file_path="made/deep/b.txt", content="one\n")
        assert not deep["is_error"], text(deep)
        more = await one(rt, "c2", "Bash", command="echo two >> made/deep/b.txt && touch made/deep/c && cat made/deep/b.txt")
        assert text(more).split() == ["one", "two"], text(more)
        made = await one(rt, "m", "Bash", command="mkdir -p sub && echo needle > sub/n.py && ln -s /etc etc_link")
        assert not made["is_error"], text(made)
        read = await one(rt, "r", "Read", file_path="/workspace/sub/n.py")
        assert "needle" in text(read) and not read["is_error"], text(read)
        found = await one(rt, "g", "Glob", pattern="**/*.py")
        assert text(found).strip() == "/workspace/sub/n.py", text(found)
        grep = await one(rt, "gr", "Grep", pattern="needle")
        assert "/workspace/sub/n.py" in text(grep) and not grep["is_error"], text(grep)
        edit = await one(rt, "ed", "Edit", file_path="sub/n.py", old_string="needle", new_string="pin")
        assert not edit["is_error"] and "/workspace/sub/n.py" in text(edit), text(edit)
    async with runtime(tmp_path, "docker", "bypassPermissions", image=image) as rt:
        await one(rt, "m", "Bash", command="ln -s /etc etc_link")
        for raw in ("/etc/hostname", "etc_link/hostname"):
            refused = await one(rt, "h", "Read", file_path=raw)
            assert refused["is_error"] and raw in text(refused) and str(tmp_path) not in text(refused), text(refused)
        planted = await one(rt, "p", "Write", file_path="etc_link/planted", content="x")
        assert planted["is_error"] and "etc_link/planted" in text(planted), text(planted)
    assert not (tmp_path / "ws" / "a.txt").exists(), "copy mode: the host workspace is untouched"


@pytest.mark.parametrize("mode", ["acceptEdits", "bypassPermissions"])
async def test_symlink_swap_race_on_the_docker_copy(tmp_path: Path, mode: str) -> None:
    """The same race on docker: d in the container's workspace (the host copy) swapped with a link to a
    host dir; 300 Writes: nothing on the host, results name /workspace paths that hold what they say."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "ws" / "d").mkdir(parents=True)
    stop = threading.Event()
    results: list[dict[str, Any]] = []
    async with runtime(tmp_path, "docker", mode) as rt:
        assert rt.backend is not None
        copy = rt.backend.to_host_path("/workspace")
        assert copy is not None and copy != tmp_path / "ws"
        (copy / "d.link").symlink_to(outside)

        def swap() -> None:
            while not stop.is_set():
                exchange(copy / "d", copy / "d.link")
            if (copy / "d").is_symlink():
                exchange(copy / "d", copy / "d.link")

        swapper = threading.Thread(target=swap)
        swapper.start()
        try:
            for n in range(300):
                results.append(await one(rt, f"w{n}", "Write", file_path=f"d/race_{n}.txt", content=f"{n}\n"))
        finally:
            stop.set()
            swapper.join()
        assert list(outside.iterdir()) == [], "nothing lands on the host"
        assert not [p for p in copy.rglob("*") if p.name.endswith(".tmp")], "no temp file left behind"
        successes = 0
        for n, result in enumerate(results):
            assert str(copy) not in text(result), "never the hidden host copy: " + text(result)
            if result["is_error"]:
                assert f"d/race_{n}.txt" in text(result), text(result)
                continue
            successes += 1
            assert f"/workspace/d/race_{n}.txt" in text(result), text(result)
            assert (copy / "d" / f"race_{n}.txt").read_text() == f"{n}\n"
        assert successes > 0
        last = max(n for n, r in enumerate(results) if not r["is_error"])
        seen = await one(rt, "c", "Bash", command=f"cat d/race_{last}.txt")
        assert text(seen).strip() == str(last), text(seen)


@pytest.mark.parametrize("backend", ["local", "bwrap"])
async def test_read_swap_race_never_reaches_a_masked_path(tmp_path: Path, backend: str) -> None:
    """f swaps between a plain file and a symlink into a read-denied directory: 300 Reads never show it."""
    ws, secrets_dir = tmp_path / "ws", tmp_path / "ws" / "secrets"
    secrets_dir.mkdir(parents=True)
    (secrets_dir / "key").write_text("MASKED-SECRET\n")
    (ws / "f").write_text("plain\n")
    (ws / "f.link").symlink_to(secrets_dir / "key")
    policy = SandboxPolicy(workspace=ws, read_denied=(secrets_dir,))
    stop = threading.Event()

    def swap() -> None:
        while not stop.is_set():
            exchange(ws / "f", ws / "f.link")

    shown: list[dict[str, Any]] = []
    async with runtime(tmp_path, backend, "bypassPermissions", policy=policy) as rt:
        swapper = threading.Thread(target=swap)
        swapper.start()
        try:
            for n in range(300):
                shown.append(await one(rt, f"r{n}", "Read", file_path="f"))
        finally:
            stop.set()
            swapper.join()
    assert not [r for r in shown if "MASKED-SECRET" in text(r)]
    # A success shows the plain file, or says it is unchanged since the last Read of it.
    assert all(("plain" in text(r) or "unchanged since last read" in text(r)) != r["is_error"] for r in shown)
    errors = {text(r) for r in shown if r["is_error"]}
    assert all(e.startswith("f: ") or "read f:" in e for e in errors), errors


async def test_bwrap_tmp_is_the_sandboxes_private_tmp(tmp_path: Path) -> None:
    """On bwrap the file tools see the /tmp commands see (the session's private one), never the host's."""
    name = f"/tmp/shellrt-confine-{os.getpid()}"
    async with runtime(tmp_path, "bwrap", "bypassPermissions") as rt:
        made = await one(rt, "b", "Bash", command=f"echo from-bash > {name}.bash")
        assert not made["is_error"], text(made)
        read = await one(rt, "r", "Read", file_path=f"{name}.bash")
        assert "from-bash" in text(read) and not read["is_error"], text(read)
        wrote = await one(rt, "w", "Write", file_path=f"{name}.write", content="from-write\n")
        assert not wrote["is_error"] and f"{name}.write" in text(wrote), text(wrote)
        seen = await one(rt, "c", "Bash", command=f"cat {name}.write")
        assert "from-write" in text(seen), text(seen)
        found = await one(rt, "g", "Glob", pattern="shellrt-confine-*", path="/tmp")
        assert f"{name}.bash" in text(found) and f"{name}.write" in text(found), text(found)
    assert not os.path.exists(f"{name}.bash") and not os.path.exists(f"{name}.write")


@pytest.mark.parametrize("backend", BACKENDS)
async def test_search_sees_what_commands_see(tmp_path: Path, backend: str) -> None:
    """Glob and Grep: masked files stay hidden, results are the sandbox's paths (ripgrep runs inside
    bwrap, on the host for local, and never inside the container: docker searches its copy)."""
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "a.py").write_text("needle = 1\n")
    extra: dict[str, Any] = {}
    if backend != "docker":
        (ws / "secrets").mkdir()
        (ws / "secrets" / "key.py").write_text("needle = 'MASKED'\n")
        extra["policy"] = SandboxPolicy(workspace=ws, read_denied=(ws / "secrets",))
    async with runtime(tmp_path, backend, "default", **extra) as rt:
        shown = "/workspace" if backend == "docker" else str(ws)
        grep = await one(rt, "g", "Grep", pattern="needle", output_mode="content")
        glob = await one(rt, "l", "Glob", pattern="**/*.py")
    assert text(grep).strip() == "src/a.py:1:needle = 1", text(grep)
    assert text(glob).strip() == f"{shown}/src/a.py", text(glob)
