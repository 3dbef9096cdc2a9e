"""Red team, round 11 (command analysis): a read-only git command fetched over the network.

In a partial clone (``remote.<name>.promisor``, ``extensions.partialClone``) git fetches a
missing object from the promisor remote whenever a command needs it: ``git show HEAD:f``,
``git log -p``, ``git diff``. A hostile repository names that remote (any URL: an
``http://`` server that learns what is read, a ``file://`` path, a remote helper), so a
command judged read-only, run without asking, made a network request or ran a transport.
Commands judged read-only now run with ``GIT_NO_LAZY_FETCH=1`` (no lazy fetch at all) and
``GIT_ALLOW_PROTOCOL=`` (no transport is allowed, should anything still try one); so does
the host's own inspection of a repository (``shellrt.tools._gitrepo``), which uses the
same overlay.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from shellrt.analysis import analyze, git_hardening_env
from tests._governance import envelope_text as _text
from tests._governance import isolated_workspace, run_bash
from tests._tcp_server import tcp_server

pytestmark = pytest.mark.anyio

_CONTENT = "secret-content-r11\n"


def _git(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", **(env or {})}
    return subprocess.run(["git", *args], cwd=cwd, env=full, capture_output=True, text=True, timeout=60)


def _partial_clone(tmp: Path, client: Path) -> str:
    """A blob-less clone of a local server; the blob id of ``a.txt`` (missing in the clone)."""
    assert shutil.which("git")
    server = tmp / "server"
    server.mkdir()
    _git("init", "-q", cwd=server)
    (server / "a.txt").write_text(_CONTENT)
    _git("add", "a.txt", cwd=server)
    _git("-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qm", "one", cwd=server)
    _git("config", "uploadpack.allowFilter", "true", cwd=server)
    _git("config", "uploadpack.allowAnySHA1InWant", "true", cwd=server)
    done = _git("clone", "-q", "--no-checkout", "--filter=blob:none", server.as_uri(), str(client), cwd=tmp)
    assert done.returncode == 0, done.stderr
    oid = _git("rev-parse", "HEAD:a.txt", cwd=client).stdout.strip()
    assert not _present(client, oid)
    return oid


def _present(repo: Path, oid: str) -> bool:
    return _git("cat-file", "-e", oid, cwd=repo, env={"GIT_NO_LAZY_FETCH": "1"}).returncode == 0


@pytest.fixture
def listener() -> Iterator[tuple[int, list[bytes]]]:
    """A TCP listener on 127.0.0.1 that records what each connection sends first."""
    seen: list[bytes] = []

    def first_bytes(conn: socket.socket) -> None:
        conn.settimeout(2)
        try:
            seen.append(conn.recv(4096))
        except OSError:
            seen.append(b"")

    with tcp_server(first_bytes) as port:
        yield port, seen


@pytest.mark.parametrize("command", ["git show HEAD:a.txt", "git log -p", "git diff HEAD~0 -- a.txt", "git cat-file -p HEAD:a.txt"])
def test_read_only_git_gets_no_lazy_fetch_and_no_transport(command: str) -> None:
    analysis = analyze(command)
    assert analysis.read_only, analysis.reasons
    assert analysis.env.get("GIT_NO_LAZY_FETCH") == "1"
    assert analysis.env.get("GIT_ALLOW_PROTOCOL") == ""
    ps = analyze("git show HEAD:a.txt", "powershell")
    assert ps.read_only and ps.env.get("GIT_NO_LAZY_FETCH") == "1" and ps.env.get("GIT_ALLOW_PROTOCOL") == ""
    assert git_hardening_env()["GIT_NO_LAZY_FETCH"] == "1"


def test_a_partial_clone_fetches_nothing_under_the_read_only_env(tmp_path: Path, listener: tuple[int, list[bytes]]) -> None:
    client = tmp_path / "client"
    oid = _partial_clone(tmp_path, client)
    env = analyze("git show HEAD:a.txt").env
    shown = _git("show", "HEAD:a.txt", cwd=client, env=env)
    assert shown.returncode != 0 and _CONTENT not in shown.stdout
    assert not _present(client, oid)
    # A promisor remote on a server of the repository's choosing: no connection is made.
    port, seen = listener
    _git("config", "remote.origin.url", f"http://127.0.0.1:{port}/x", cwd=client)
    shown = _git("show", "HEAD:a.txt", cwd=client, env=env)
    assert shown.returncode != 0
    assert seen == []
    # The attack is real: without that environment, the same read connects to the server.
    _git("show", "HEAD:a.txt", cwd=client, env={"GIT_TERMINAL_PROMPT": "0"})
    assert seen and seen[0].startswith(b"GET /x/info/refs"), seen


async def test_the_bash_tool_runs_read_only_git_without_lazy_fetch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, listener: tuple[int, list[bytes]]
) -> None:
    ws = isolated_workspace(tmp_path, monkeypatch)
    oid = _partial_clone(tmp_path, ws)
    port, seen = listener
    _git("config", "remote.origin.url", f"http://127.0.0.1:{port}/x", cwd=ws)
    [envelope] = await run_bash(ws, ["git show HEAD:a.txt"], mode="default", id_prefix="r11g")
    assert _CONTENT not in _text(envelope)
    assert "Permission" not in _text(envelope), _text(envelope)  # judged read-only: it ran unasked
    assert seen == [], seen
    _git("config", "remote.origin.url", (tmp_path / "server").as_uri(), cwd=ws)
    [envelope] = await run_bash(ws, ["git show HEAD:a.txt"], mode="default", id_prefix="r11g")
    assert _CONTENT not in _text(envelope)
    assert not _present(ws, oid)
